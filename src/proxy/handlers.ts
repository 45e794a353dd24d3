/**
 * The public routes' handlers: identify -> parse -> route -> (admission) -> forward -> account.
 */
import { randomUUID } from 'node:crypto'
import type { OutgoingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest, FastifyBaseLogger as Logger } from 'fastify'
import type { Admission, Waiting } from '../admission/admission.js'
import type { BackendPool, Backends, Lease } from '../backends/types.js'
import type { Clock } from '../clock.js'
import { errorHeaders, GatewayError } from '../errors.js'
import { type JsonBody, promptSize, readFields, requestStreamUsage } from '../openai/request-fields.js'
import { Ticket } from '../ticket.js'
import { logTicket, type RequestRecorder } from './account.js'
import { CLIENT_CLOSED, forward } from './forward.js'
import { upstreamRequestHeaders } from './headers.js'

export interface ProxyContext {
  readonly backends: Backends
  /** Undefined: a plain proxy (admission.enabled false). */
  readonly admission?: Admission | undefined
  readonly recorder: RequestRecorder
  readonly clock: Clock
  readonly logger: Logger
}

/** Until admission estimates it, the expected output of a request with no max_tokens. */
const DEFAULT_EXPECTED_OUTPUT = 256

function isJsonObject(v: unknown): v is JsonBody {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

export class ProxyHandlers {
  private readonly ctx: ProxyContext
  private inflight = 0
  private idleWaiters: (() => void)[] = []
  draining = false

  constructor(ctx: ProxyContext) {
    this.ctx = ctx
  }

  get inFlight(): number {
    return this.inflight
  }

  /** Resolves when no request is in flight. */
  whenIdle(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  newTicket(request: FastifyRequest): Ticket {
    const t = new Ticket(request.id, request.method, request.url, this.ctx.clock.now())
    t.route = request.routeOptions.url ?? 'unmatched'
    this.inflight++
    return t
  }

  /** Accounting: exactly once per ticket. */
  readonly account = (t: Ticket): void => {
    if (t.finishedAt === undefined) t.finishedAt = this.ctx.clock.now()
    try {
      this.ctx.recorder.record(t)
      this.ctx.recorder.observeHttp?.(t.route, t.method, t.status, (t.finishedAt - t.arrivedAt) / 1000)
    } catch (err) {
      this.ctx.logger.error({ err, reqId: t.id }, 'telemetry record failed')
    }
    logTicket(this.ctx.logger, t)
    if (--this.inflight === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters
      this.idleWaiters = []
      for (const w of waiters) w()
    }
  }

  /** Answers with a gateway error and accounts the ticket. */
  refuse(t: Ticket, reply: FastifyReply, err: GatewayError): void {
    t.status = err.status
    t.errorCode = err.code
    if (t.outcome === 'pending') t.outcome = err.status === 503 || err.status === 429 ? 'rejected' : 'invalid'
    reply.hijack()
    const res = reply.raw
    if (!res.headersSent) {
      res.writeHead(err.status, { ...errorHeaders(err), 'x-request-id': t.id })
      res.end(err.toJSON())
    }
    this.account(t)
  }

  /** POST routes with an OpenAI JSON body (chat, completions, embeddings, ...). */
  readonly json = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const t = this.newTicket(request)
    if (this.draining)
      return this.refuse(t, reply, new GatewayError('GW_ERR_DRAINING', {}, { retryAfterMs: 1000 }))
    const body = request.body
    if (!isJsonObject(body)) {
      const reason = Array.isArray(body) ? 'got a JSON array' : `got ${body === null ? 'null' : typeof body}`
      return this.refuse(t, reply, new GatewayError('GW_ERR_INVALID_BODY', { reason }))
    }
    const fields = readFields(body)
    t.model = fields.model
    t.stream = fields.stream
    t.maxTokens = fields.maxTokens
    t.clientWantsUsage = fields.clientWantsUsage
    const pool = this.ctx.backends.route(fields.model)
    if (pool === undefined) {
      return this.refuse(
        t,
        reply,
        new GatewayError('GW_ERR_MODEL_NOT_FOUND', { model: fields.model ?? '' }, { param: 'model' }),
      )
    }
    t.pool = pool.name
    const generates =
      request.url.startsWith('/v1/chat/completions') || request.url.startsWith('/v1/completions')
    const admission = this.ctx.admission
    if (!generates || admission === undefined) {
      const stripUsage = generates && t.stream && !t.clientWantsUsage
      if (stripUsage) requestStreamUsage(body)
      t.promptTokens = Math.ceil(promptSize(body).chars / 4)
      const lease = pool.acquire(t.promptTokens + (t.maxTokens ?? DEFAULT_EXPECTED_OUTPUT))
      if (lease === undefined) {
        const err = new GatewayError(
          'GW_ERR_NO_BACKEND',
          { model: t.model ?? pool.name },
          { retryAfterMs: pool.retryAfterMs() },
        )
        this.refuse(t, reply, err)
        return
      }
      this.forwardTo(t, request, reply, lease, JSON.stringify(body), stripUsage, {})
      return
    }
    this.admit(t, request, reply, pool, body, fields.serviceTier, admission)
  }

  /** Generation requests: admission decides, queues and dispatches. */
  private admit(
    t: Ticket,
    request: FastifyRequest,
    reply: FastifyReply,
    pool: BackendPool,
    body: JsonBody,
    serviceTier: string | undefined,
    admission: Admission,
  ): void {
    const d = admission.decide({
      ticket: t,
      body,
      pool,
      priorityHeader: request.headers['x-priority'],
      serviceTier,
    })
    if (d.kind === 'reject') {
      this.refuse(t, reply, d.error)
      return
    }
    const stripUsage = t.stream && !t.clientWantsUsage
    if (stripUsage) requestStreamUsage(body)
    const payload = JSON.stringify(body)
    t.bodyBytes = payload.length
    reply.hijack() // the answer may come later, from the dispatcher
    const res = reply.raw
    let queued = true
    const w: Waiting = {
      id: t.id,
      ticket: t,
      className: d.className,
      promptTokens: d.promptTokens,
      kvTokens: d.kvTokens,
      prediction: d.prediction,
      bytes: payload.length,
      dispatch: (lease, queuedMs) => {
        queued = false
        res.off('close', onClose)
        const extra: OutgoingHttpHeaders = {
          'x-gateway-class': d.className,
          'x-gateway-predicted-ttft-ms': String(Math.round(t.predictedTtftMs ?? 0)),
          'x-gateway-queue-ms': String(Math.round(queuedMs)),
        }
        if (t.degraded.length > 0) extra['x-gateway-degraded'] = t.degraded.join(',')
        if (t.servedModel !== undefined) extra['x-gateway-model'] = t.servedModel
        const done = this.account
        this.forwardTo(t, request, reply, lease, payload, stripUsage, extra, (ticket) => {
          admission.learnTokens(ticket, body)
          done(ticket)
        })
      },
      shed: (err) => {
        queued = false
        res.off('close', onClose)
        this.refuse(t, reply, err)
      },
    }
    const onClose = () => {
      if (queued && d.pool.cancel(w)) {
        queued = false
        t.outcome = 'cancelled'
        t.status = CLIENT_CLOSED
        this.account(t)
      }
    }
    res.on('close', onClose)
    const placed = d.pool.place(w, t.tenant, 1, d.deadline)
    if (placed === 'queue_full' && queued) {
      queued = false
      res.off('close', onClose)
      this.refuse(
        t,
        reply,
        new GatewayError(
          'GW_ERR_QUEUE_FULL',
          { class: d.className },
          { retryAfterMs: d.pool.drainMs(d.className, 0) },
        ),
      )
    }
  }

  /** Any other /v1/* request: forwarded as it came, body streamed. */
  readonly raw = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const t = this.newTicket(request)
    if (this.draining)
      return this.refuse(t, reply, new GatewayError('GW_ERR_DRAINING', {}, { retryAfterMs: 1000 }))
    const backends = this.ctx.backends
    const pool = backends.route(undefined) ?? backends.pools()[0]
    if (pool === undefined) return this.refuse(t, reply, new GatewayError('GW_ERR_NO_BACKEND', { model: '' }))
    t.pool = pool.name
    const body = (request.body as Readable | undefined) ?? null
    const lease = pool.acquire(0)
    if (lease === undefined) {
      this.refuse(
        t,
        reply,
        new GatewayError('GW_ERR_NO_BACKEND', { model: pool.name }, { retryAfterMs: pool.retryAfterMs() }),
      )
      return
    }
    this.forwardTo(t, request, reply, lease, body, false, {})
  }

  private forwardTo(
    t: Ticket,
    request: FastifyRequest,
    reply: FastifyReply,
    lease: Lease,
    body: string | Readable | null,
    stripUsage: boolean,
    extra: OutgoingHttpHeaders,
    onDone: (t: Ticket) => void = this.account,
  ): void {
    const headers = upstreamRequestHeaders(request.headers)
    headers['x-request-id'] = t.id
    if (typeof body === 'string') {
      headers['content-type'] = 'application/json'
      headers['content-length'] = String(Buffer.byteLength(body))
    } else if (request.headers['content-length'] !== undefined) {
      headers['content-length'] = request.headers['content-length']
    }
    extra['x-request-id'] = t.id
    extra['x-gateway-backend'] = lease.endpoint.name
    if (!reply.sent) reply.hijack()
    forward({
      ticket: t,
      lease,
      method: request.method,
      path: request.url,
      headers,
      body,
      res: reply.raw,
      extraHeaders: extra,
      stripUsage,
      clock: this.ctx.clock,
      onDone,
    })
  }
}

/** Request ids: the client's x-request-id when sane, else a UUID. */
export function requestId(header: string | string[] | undefined): string {
  if (typeof header === 'string' && header.length > 0 && header.length <= 128 && /^[\w.:-]+$/.test(header)) {
    return header
  }
  return randomUUID()
}
