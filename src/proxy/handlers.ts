/**
 * The public routes' handlers: identify -> parse -> route -> (admission) -> forward -> account.
 */
import { randomUUID } from 'node:crypto'
import type { OutgoingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest, FastifyBaseLogger as Logger } from 'fastify'
import type { BackendPool, Backends } from '../backends/types.js'
import type { Clock } from '../clock.js'
import { errorHeaders, GatewayError } from '../errors.js'
import { type JsonBody, promptChars, readFields, requestStreamUsage } from '../openai/request-fields.js'
import { Ticket } from '../ticket.js'
import { logTicket, type RequestRecorder } from './account.js'
import { forward } from './forward.js'
import { upstreamRequestHeaders } from './headers.js'

export interface ProxyContext {
  readonly backends: Backends
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
    this.inflight++
    return t
  }

  /** Accounting: exactly once per ticket. */
  readonly account = (t: Ticket): void => {
    if (t.finishedAt === undefined) t.finishedAt = this.ctx.clock.now()
    try {
      this.ctx.recorder.record(t)
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
    const stripUsage = generates && t.stream && !t.clientWantsUsage
    if (stripUsage) requestStreamUsage(body)
    t.promptTokens = Math.ceil(promptChars(body) / 4)
    const payload = JSON.stringify(body)
    t.bodyBytes = payload.length
    this.dispatch(t, request, reply, pool, payload, stripUsage)
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
    this.dispatch(t, request, reply, pool, body, false)
  }

  private dispatch(
    t: Ticket,
    request: FastifyRequest,
    reply: FastifyReply,
    pool: BackendPool,
    body: string | Readable | null,
    stripUsage: boolean,
  ): void {
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
    const headers = upstreamRequestHeaders(request.headers)
    headers['x-request-id'] = t.id
    if (typeof body === 'string') {
      headers['content-type'] = 'application/json'
      headers['content-length'] = String(Buffer.byteLength(body))
    } else if (request.headers['content-length'] !== undefined) {
      headers['content-length'] = request.headers['content-length']
    }
    const extraHeaders: OutgoingHttpHeaders = {
      'x-request-id': t.id,
      'x-gateway-backend': lease.endpoint.name,
    }
    reply.hijack()
    forward({
      ticket: t,
      lease,
      method: request.method,
      path: request.url,
      headers,
      body,
      res: reply.raw,
      extraHeaders,
      stripUsage,
      clock: this.ctx.clock,
      onDone: this.account,
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
