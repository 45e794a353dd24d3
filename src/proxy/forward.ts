/**
 * Forwarding: one request to one upstream endpoint, streamed both ways.
 *
 * Written on undici's dispatch handler API rather than @fastify/reply-from: the gateway
 * must see every response chunk (stream observer, usage-chunk removal), end a broken
 * stream with an SSE error event, release its backend lease on exactly one path however
 * the request ends, and pick the endpoint per request from pools that change at run
 * time. reply-from hides the first two behind its own stream handling and maps failures
 * to its own statuses; the handler API gives them directly, with backpressure, and costs
 * one object per request.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'
import type { Dispatcher } from 'undici'
import type { EndpointResult, Lease } from '../backends/types.js'
import type { Clock } from '../clock.js'
import { type ErrorCode, errorHeaders, GatewayError } from '../errors.js'
import { JsonObserver } from '../openai/json-observer.js'
import { SseRelay, streamErrorEvent } from '../openai/sse-relay.js'
import type { Ticket } from '../ticket.js'
import { clientResponseHeaders } from './headers.js'

export interface ForwardRequest {
  readonly ticket: Ticket
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
  readonly clock: Clock
  /** Called once when the exchange has ended, whatever the outcome. */
  readonly onDone: (ticket: Ticket) => void
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

/** nginx's status for a request the client closed before the answer (logs and metrics only). */
export const CLIENT_CLOSED = 499

class ClientGoneError extends Error {
  override readonly name = 'ClientGoneError'
}

function classify(err: Error): { code: ErrorCode; result: EndpointResult } {
  const code = (err as NodeJS.ErrnoException).code ?? ''
  if (CONNECT_FAILURES.has(code)) return { code: 'GW_ERR_UPSTREAM_UNREACHABLE', result: 'connect_error' }
  if (TIMEOUTS.has(code)) return { code: 'GW_ERR_UPSTREAM_TIMEOUT', result: 'timeout' }
  return { code: 'GW_ERR_UPSTREAM_RESET', result: 'server_error' }
}

class Exchange implements Dispatcher.DispatchHandler {
  private readonly r: ForwardRequest
  private controller: Dispatcher.DispatchController | undefined
  private sse: SseRelay | undefined
  private json: JsonObserver | undefined
  private headersSent = false
  private clientGone = false
  private done = false
  private readonly onClientClose = () => {
    if (this.done || this.r.res.writableFinished) return
    this.clientGone = true
    this.controller?.abort(new ClientGoneError('client closed the connection'))
  }
  private readonly onDrain = () => this.controller?.resume()

  constructor(r: ForwardRequest) {
    this.r = r
    r.res.on('close', this.onClientClose)
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
    const { ticket, res, clock } = this.r
    ticket.responseStartedAt = clock.now()
    ticket.status = statusCode
    const out = clientResponseHeaders(headers)
    const type = headers['content-type']
    if (statusCode < 300 && typeof type === 'string' && type.startsWith('text/event-stream')) {
      this.sse = new SseRelay(ticket, clock, this.r.stripUsage)
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
    if (this.clientGone) return
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
    const { ticket, res } = this.r
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
    const { ticket, res } = this.r
    if (this.clientGone || err instanceof ClientGoneError) {
      ticket.outcome = 'cancelled'
      if (!this.headersSent) ticket.status = CLIENT_CLOSED
      if (!res.destroyed) res.destroy()
      this.finish('client_abort')
      return
    }
    const { code, result } = classify(err)
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
    const { ticket, res, clock } = this.r
    ticket.finishedAt = clock.now()
    ticket.onPrefilled?.()
    res.off('close', this.onClientClose)
    res.off('drain', this.onDrain)
    this.r.lease.release(result)
    this.r.onDone(ticket)
  }
}

/** Sends the request upstream and relays the answer to `req.res`. Never throws. */
export function forward(req: ForwardRequest): void {
  const { ticket, lease, clock } = req
  ticket.dispatchedAt = clock.now()
  ticket.backend = lease.endpoint.name
  const handler = new Exchange(req)
  try {
    lease.endpoint.dispatcher.dispatch(
      { path: req.path, method: req.method, headers: req.headers, body: req.body },
      handler,
    )
  } catch (err) {
    handler.fail(err as Error)
  }
}
