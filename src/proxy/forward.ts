/**
 * Stage forward: one request to the endpoint admission leased it, streamed both ways.
 *
 * Written on undici's dispatch handler API rather than @fastify/reply-from: the gateway
 * must see every response chunk (stream observer, usage-chunk removal), end a broken
 * stream with an SSE error event, end the request's Exchange (which releases the lease) on
 * exactly one path however the request ends, and pick the endpoint per request from pools that change at run
 * time. reply-from hides the first two behind its own stream handling and maps failures
 * to its own statuses; the handler API gives them directly, with backpressure, and costs
 * one object per request.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'
import type { Dispatcher } from 'undici'
import type { EndpointResult, Lease } from '../backends/types.js'
import { type ErrorCode, errorHeaders, GatewayError } from '../errors.js'
import type { Exchange } from '../exchange.js'
import type { GatewayRequest, Stage, StageDeps } from '../gateway-request.js'
import { type Objectives, objectivesOf } from '../objectives.js'
import { upstreamBody } from '../openai/body-bytes.js'
import { JsonObserver } from '../openai/json-observer.js'
import { SseRelay, streamErrorEvent } from '../openai/sse-relay.js'
import { rateLimitHeaders } from '../tenants/ratelimit-headers.js'
import { CLIENT_CLOSED, type Ticket } from '../ticket.js'
import { clientResponseHeaders, upstreamRequestHeaders } from './headers.js'

export interface ForwardRequest {
  readonly exchange: Exchange
  readonly lease: Lease
  readonly method: string
  /** Path and query for the upstream. */
  readonly path: string
  readonly headers: Record<string, string | string[]>
  readonly body: string | Buffer | Readable | null
  /** The client's response. */
  readonly res: ServerResponse
  /** Gateway headers added to the client's response (x-gateway-*). */
  readonly extraHeaders: OutgoingHttpHeaders
  /** Remove the usage-only chunk (the gateway asked for it, not the client). */
  readonly stripUsage: boolean
  /** How long to wait for the response's headers (default: the endpoint pool's). */
  readonly headersTimeoutMs?: number
}

const CONNECT_FAILURES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
])
const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])

class ClientGoneError extends Error {
  override readonly name = 'ClientGoneError'
}

function failureOf(err: Error): { code: ErrorCode; result: EndpointResult } {
  const code = (err as NodeJS.ErrnoException).code ?? ''
  if (CONNECT_FAILURES.has(code)) return { code: 'GW_ERR_UPSTREAM_UNREACHABLE', result: 'connect_error' }
  if (TIMEOUTS.has(code)) return { code: 'GW_ERR_UPSTREAM_TIMEOUT', result: 'timeout' }
  return { code: 'GW_ERR_UPSTREAM_RESET', result: 'server_error' }
}

class UpstreamHandler implements Dispatcher.DispatchHandler {
  private readonly r: ForwardRequest
  private controller: Dispatcher.DispatchController | undefined
  private sse: SseRelay | undefined
  private json: JsonObserver | undefined
  private headersSent = false
  private clientGone = false
  /** Ended by the gateway (drain): the client has its answer; the upstream is aborted. */
  private stopped = false
  private done = false
  private readonly onClientClose = () => {
    if (this.done || this.r.res.writableFinished) return
    this.clientGone = true
    this.controller?.abort(new ClientGoneError('client closed the connection'))
  }
  private readonly onDrain = () => this.controller?.resume()

  constructor(r: ForwardRequest) {
    this.r = r
    // the client may have left while the request was queued, before this listener
    this.clientGone = r.res.destroyed
    r.res.on('close', this.onClientClose)
    r.exchange.onStop((err) => this.stop(err))
  }

  /**
   * Ends the exchange for the gateway's own reason (the drain's grace period is over): the
   * client gets `err` as the error response, or as a stream's final error event; the
   * upstream request is aborted. The request failed (the service's fault, not the client's).
   */
  stop(err: GatewayError): void {
    if (this.done || this.stopped) return
    this.stopped = true
    const { res } = this.r
    const ticket = this.r.exchange.ticket
    ticket.outcome = 'failed'
    ticket.errorCode = err.code
    if (!this.headersSent) {
      ticket.status = err.status
      if (!res.destroyed) {
        res.writeHead(err.status, { ...errorHeaders(err), ...this.r.extraHeaders })
        res.end(err.toJSON())
      }
    } else if (this.sse !== undefined) {
      this.sse.discard()
      res.end(streamErrorEvent(err.toBody()))
    } else {
      res.destroy()
    }
    if (this.controller === undefined) this.finish('client_abort')
    else this.controller.abort(new ClientGoneError('stopped by the gateway'))
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    if (this.clientGone) controller.abort(new ClientGoneError('client closed the connection'))
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (this.stopped) return
    const { exchange, res } = this.r
    exchange.responseStarted(statusCode)
    const out = clientResponseHeaders(headers)
    const type = headers['content-type']
    if (statusCode < 300 && typeof type === 'string' && type.startsWith('text/event-stream')) {
      this.sse = new SseRelay(exchange, this.r.stripUsage)
      if (this.r.stripUsage) delete out['content-length']
    } else if (statusCode < 300) {
      this.json = new JsonObserver()
    }
    Object.assign(out, this.r.extraHeaders)
    if (this.clientGone) return
    res.writeHead(statusCode, out)
    // A stream's status and x-gateway-* headers go out now, not with the first token
    // (which may be seconds away while the server prefills).
    if (this.sse !== undefined) res.flushHeaders()
    this.headersSent = true
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.clientGone || this.stopped) return
    let out = chunk
    if (this.sse !== undefined) {
      out = this.sse.push(chunk)
      if (out.length === 0) return
    } else {
      this.json?.push(chunk)
    }
    if (!this.r.res.write(out)) {
      controller.pause()
      this.r.res.once('drain', this.onDrain)
    }
  }

  onResponseEnd(): void {
    if (this.stopped) {
      this.finish('client_abort')
      return
    }
    const { res } = this.r
    const ticket = this.r.exchange.ticket
    if (this.sse !== undefined) {
      const rest = this.sse.flush()
      if (rest.length > 0 && !this.clientGone) res.write(rest)
    }
    this.json?.finish(ticket)
    ticket.outcome = ticket.status >= 400 ? 'upstream_error' : 'ok'
    res.end()
    this.finish(ticket.status >= 500 ? 'server_error' : 'ok')
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.fail(err)
  }

  /** Ends the exchange after a transport failure or an abort. */
  fail(err: Error): void {
    if (this.stopped) {
      this.finish('client_abort')
      return
    }
    const { res } = this.r
    const ticket = this.r.exchange.ticket
    if (this.clientGone || err instanceof ClientGoneError) {
      ticket.outcome = 'cancelled'
      if (!this.headersSent) ticket.status = CLIENT_CLOSED
      if (!res.destroyed) res.destroy()
      this.finish('client_abort')
      return
    }
    const { code, result } = failureOf(err)
    ticket.outcome = 'failed'
    if (!this.headersSent) {
      const gwErr = new GatewayError(code, {}, { cause: err })
      ticket.errorCode = code
      ticket.status = gwErr.status
      res.writeHead(gwErr.status, { ...errorHeaders(gwErr), ...this.r.extraHeaders })
      res.end(gwErr.toJSON())
    } else if (this.sse !== undefined) {
      // Mid-stream: a final error event, then the end (docs/errors.md).
      const gwErr = new GatewayError('GW_ERR_UPSTREAM_STREAM_FAILED', {}, { cause: err })
      ticket.errorCode = gwErr.code
      this.sse.discard()
      res.end(streamErrorEvent(gwErr.toBody()))
    } else {
      // A JSON body cut short cannot be mended; closing without the terminating chunk
      // makes the client see the truncation.
      ticket.errorCode = 'GW_ERR_UPSTREAM_STREAM_FAILED'
      res.destroy()
    }
    this.finish(result)
  }

  private finish(result: EndpointResult): void {
    if (this.done) return
    this.done = true
    const { res } = this.r
    res.off('close', this.onClientClose)
    res.off('drain', this.onDrain)
    this.r.exchange.end(result)
  }
}

/** Sends the request upstream and relays the answer to `req.res`. Never throws. */
export function forward(req: ForwardRequest): void {
  const { exchange, lease } = req
  exchange.dispatched(lease.endpoint.name)
  const handler = new UpstreamHandler(req)
  try {
    lease.endpoint.dispatcher.dispatch(
      {
        path: req.path,
        method: req.method,
        headers: req.headers,
        body: req.body,
        ...(req.headersTimeoutMs === undefined ? {} : { headersTimeout: req.headersTimeoutMs }),
      },
      handler,
    )
  } catch (err) {
    handler.fail(err as Error)
  }
}

/** The x-gateway-* headers of an admitted request, from what admission recorded. */
function gatewayHeaders(t: Ticket, backend: string): OutgoingHttpHeaders {
  const out: Record<string, string> = { 'x-request-id': t.id }
  // the tenant's quota after this request (limits stage), as OpenAI sends it
  if (t.rateRequests !== undefined || t.rateTokens !== undefined)
    rateLimitHeaders(t.rateRequests, t.rateTokens, out)
  if (t.predictedTtftMs !== undefined) {
    out['x-gateway-class'] = t.class
    out['x-gateway-predicted-ttft-ms'] = String(Math.round(t.predictedTtftMs))
    out['x-gateway-queue-ms'] = String(Math.round(t.queuedMs ?? 0))
    if (t.degraded.length > 0) out['x-gateway-degraded'] = t.degraded.join(',')
  }
  if (t.servedModel !== undefined) out['x-gateway-model'] = t.servedModel
  out['x-gateway-backend'] = backend
  return out
}

/** Twice its objectives: a server that has not answered by then is wedged for this request. */
const HEADERS_SLO_FACTOR = 2
const HEADERS_FLOOR_MS = 1000

/**
 * How long to wait for the response's headers: bounded by the request's objectives `slo`
 * (its class's, or its tenant's override), so a wedged server does not hold an
 * interactive client for minutes. A stream's headers come before its first token: 2 × the
 * TTFT objective; a whole response's come at its end: 2 × (TTFT + TPOT × expected output
 * tokens), else 2 × its E2E objective. At least 1 s, at most `ceilingMs` (the endpoint's
 * upstream.headers_timeout_ms), which is also the bound of a request with no objective.
 */
export function headersTimeoutMs(t: Ticket, slo: Objectives | undefined, ceilingMs: number): number {
  let bound: number | undefined
  if (slo?.ttft_ms !== undefined) {
    bound = t.stream ? slo.ttft_ms : slo.ttft_ms + (slo.tpot_ms ?? 0) * t.expectedOutputTokens
  }
  if (slo?.e2e_ms !== undefined && (bound === undefined || !t.stream))
    bound = Math.min(bound ?? slo.e2e_ms, slo.e2e_ms)
  if (bound === undefined) return ceilingMs
  return Math.min(ceilingMs, Math.max(HEADERS_FLOOR_MS, HEADERS_SLO_FACTOR * bound))
}

/** The forward stage: the request as the endpoint gets it, sent with its lease. */
export function forwardStage(deps: StageDeps): Stage {
  return (r: GatewayRequest) => {
    const lease = r.lease as Lease
    const t = r.ticket
    // a tenant's API key is the gateway's credential: the model server never sees it
    const headers = upstreamRequestHeaders(r.headers, t.keyConsumed)
    headers['x-request-id'] = t.id
    let body: Buffer | Readable | null
    if (r.body !== undefined) {
      body = upstreamBody(r.raw, r.original, r.body)
      headers['content-type'] = 'application/json'
      headers['content-length'] = String(body.length)
    } else {
      body = (r.received as Readable | undefined) ?? null
      const length = r.headers['content-length']
      if (length !== undefined) headers['content-length'] = length
    }
    forward({
      exchange: r.exchange,
      lease,
      method: r.method,
      path: r.url,
      headers,
      body,
      res: r.res,
      extraHeaders: gatewayHeaders(t, lease.endpoint.name),
      stripUsage: t.usageAdded,
      ...(lease.endpoint.headersTimeoutMs === undefined
        ? {}
        : {
            headersTimeoutMs: headersTimeoutMs(
              t,
              objectivesOf(t, deps.classes),
              lease.endpoint.headersTimeoutMs,
            ),
          }),
    })
    return undefined
  }
}
