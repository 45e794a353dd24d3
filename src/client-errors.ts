/**
 * What a client gets when its bytes never become a request: Node's HTTP parser refused
 * them (conflicting Content-Length and Transfer-Encoding, as in request smuggling; a bad
 * chunk; a bad header), the headers were too large, or the client was too slow to send
 * them (server.headers_timeout_ms, server.request_timeout_ms: slowloris). Fastify's own
 * answer is not OpenAI-shaped; this one is, with the gateway's error codes, and the
 * connection is then closed (nothing after a framing error can be trusted).
 */
import type { Socket } from 'node:net'
import type { FastifyBaseLogger as Logger } from 'fastify'
import { errorHeaders, GatewayError } from './errors.js'

interface Timeouts {
  readonly headersMs: number
  readonly requestMs: number
}

/** Node's default --max-http-header-size. */
const HEADER_LIMIT = 16 * 1024

function errorFor(err: NodeJS.ErrnoException, timeouts: Timeouts): GatewayError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new GatewayError('GW_ERR_REQUEST_TIMEOUT', { ...timeouts })
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return new GatewayError('GW_ERR_HEADERS_TOO_LARGE', { limit: HEADER_LIMIT })
  // llhttp's reasons are short and say nothing of the gateway ("Content-Length can't be present with Transfer-Encoding")
  const reason = String((err as { reason?: unknown }).reason ?? err.code ?? 'malformed').slice(0, 120)
  return new GatewayError('GW_ERR_MALFORMED_REQUEST', { reason: reason.replace(/[^\x20-\x7e]/g, '?') })
}

/** The public listener's `clientError` handler (Fastify's `clientErrorHandler`). */
export function clientErrorHandler(logger: Logger, timeouts: Timeouts) {
  return (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const gwErr = errorFor(err, timeouts)
    logger.debug({ code: gwErr.code, parser: err.code }, 'client error')
    if (socket.writable) {
      const body = gwErr.toJSON()
      const headers = {
        ...errorHeaders(gwErr),
        'content-length': String(Buffer.byteLength(body)),
        connection: 'close',
      }
      const head = Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\r\n')
      socket.end(`HTTP/1.1 ${gwErr.status} ${statusText(gwErr.status)}\r\n${head}\r\n\r\n${body}`)
    }
    socket.destroySoon()
  }
}

function statusText(status: number): string {
  if (status === 408) return 'Request Timeout'
  if (status === 431) return 'Request Header Fields Too Large'
  return 'Bad Request'
}
