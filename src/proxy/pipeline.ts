/**
 * The runner of the request's path: makes each request's Ticket and Exchange, runs the
 * stages of src/stages.ts in order, answers a refusal, and keeps the count of requests in
 * flight (for drain). It knows no stage's job.
 */
import type { FastifyReply, FastifyRequest, FastifyBaseLogger as Logger } from 'fastify'
import type { Clock } from '../clock.js'
import { errorHeaders, GatewayError } from '../errors.js'
import { Exchange, type ExchangeObserver } from '../exchange.js'
import { ReceivedJson } from '../openai/json-body.js'
import { SlotMap } from '../slot-map.js'
import {
  buildStages,
  ENDED,
  type GatewayRequest,
  type Stage,
  type StageDeps,
  type StageResult,
} from '../stages.js'
import { Ticket } from '../ticket.js'

export interface PipelineDeps extends StageDeps {
  readonly clock: Clock
  readonly logger: Logger
  /** Gateway-wide observers of every exchange (learning, accounting), in order. */
  readonly observers: readonly ExchangeObserver[]
}

export class Pipeline {
  private readonly stages: readonly Stage[]
  private readonly clock: Clock
  private readonly logger: Logger
  private readonly observers: readonly ExchangeObserver[]
  private inflight = 0
  private idleWaiters: (() => void)[] = []
  /** The exchanges not ended yet (for stopAll). Not a Map: see slot-map.ts. */
  private readonly live = new SlotMap<Ticket, GatewayRequest>()
  draining = false

  constructor(deps: PipelineDeps) {
    this.stages = buildStages(deps)
    this.clock = deps.clock
    this.logger = deps.logger
    // the in-flight count hears the end last, once everything else has
    this.observers = [...deps.observers, { ended: (t) => this.left(t) }]
  }

  get inFlight(): number {
    return this.inflight
  }

  /** Resolves when no request is in flight. */
  whenIdle(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /**
   * One request from the HTTP app: its ticket and exchange. Everything is answered on
   * `reply.raw`. `route`: the route it matched (the handler's), else fastify's.
   */
  begin(
    request: FastifyRequest,
    reply: FastifyReply,
    kind: GatewayRequest['kind'],
    route = request.routeOptions.url ?? 'unmatched',
  ): GatewayRequest {
    const t = new Ticket(request.id, request.method, request.url, this.clock.now())
    t.route = route
    this.inflight++
    reply.hijack()
    const got = request.body
    const json = got instanceof ReceivedJson ? got : undefined
    const r: GatewayRequest = {
      ticket: t,
      exchange: new Exchange(t, this.clock, this.observers),
      method: request.method,
      url: request.url,
      headers: request.headers,
      res: reply.raw,
      kind,
      received: json === undefined ? got : json.value,
      raw: json?.raw,
      body: undefined,
      pool: undefined,
      lease: undefined,
    }
    this.live.set(t, r)
    return r
  }

  /**
   * Ends every exchange still open with GW_ERR_DRAINING (the drain's grace period is
   * over): a queued request is refused, a request at an endpoint gets the error response
   * or, mid-stream, the final error event, and its upstream request is aborted. Resolves
   * when those answers have been handed to the sockets (at most `flushMs` later).
   */
  async stopAll(flushMs = 500): Promise<void> {
    const err = new GatewayError('GW_ERR_DRAINING', {}, { retryAfterMs: 1000 })
    const flushed: Promise<unknown>[] = []
    for (const r of this.live.values()) {
      r.exchange.stop(err)
      if (!r.res.writableFinished && !r.res.destroyed) {
        flushed.push(new Promise((resolve) => r.res.once('close', resolve).once('finish', resolve)))
      }
    }
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.all(flushed),
      new Promise((resolve) => (timer = setTimeout(resolve, flushMs))),
    ])
    clearTimeout(timer)
  }

  /** Runs the stages from `from` on. Never throws. */
  run(r: GatewayRequest, from = 0): void {
    if (from === 0 && this.draining) {
      this.refuse(r, new GatewayError('GW_ERR_DRAINING', {}, { retryAfterMs: 1000 }))
      return
    }
    try {
      for (let i = from; i < this.stages.length; i++) {
        const out = this.stages[i]!(r)
        if (out === undefined) continue
        if (out instanceof Promise) {
          out.then(
            (res) => this.resume(r, res, i + 1),
            (err: unknown) => this.internal(r, err),
          )
          return
        }
        this.resume(r, out, i + 1)
        return
      }
    } catch (err) {
      this.internal(r, err)
    }
  }

  /** Answers with a gateway error and ends the exchange. */
  refuse(r: GatewayRequest, err: GatewayError): void {
    const t = r.ticket
    t.status = err.status
    t.errorCode = err.code
    if (t.outcome === 'pending') t.outcome = err.outcome
    const res = r.res
    if (!res.headersSent && !res.destroyed) {
      const headers: Record<string, string> = { ...errorHeaders(err), 'x-request-id': t.id }
      // refused from the gateway's queue: how long it waited there (absent: refused on arrival)
      if (t.queuedMs !== undefined) headers['x-gateway-queue-ms'] = String(Math.round(t.queuedMs))
      // how long the gateway held it, from its whole body received to this answer (W3C Server
      // Timing): what a client measures beyond this is the network and the two event loops
      headers['server-timing'] = `gateway;dur=${(this.clock.now() - t.arrivedAt).toFixed(2)}`
      res.writeHead(err.status, headers)
      res.end(err.toJSON())
    }
    r.exchange.end(undefined)
  }

  private resume(r: GatewayRequest, out: StageResult, next: number): void {
    if (out === undefined) this.run(r, next)
    else if (out !== ENDED) this.refuse(r, out)
  }

  private internal(r: GatewayRequest, err: unknown): void {
    if (r.exchange.isEnded) return
    this.logger.error({ err, reqId: r.ticket.id }, 'unhandled error in the request path')
    this.refuse(r, new GatewayError('GW_ERR_INTERNAL', {}, { cause: err }))
  }

  private left(t: Ticket): void {
    this.live.delete(t)
    if (--this.inflight === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters
      this.idleWaiters = []
      for (const w of waiters) w()
    }
  }
}
