/**
 * Header hygiene, both ways: hop-by-hop headers (RFC 9110 7.6.1) and any header named in
 * `Connection` belong to one connection and are never forwarded.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http'

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
])

/** Request headers the gateway sets itself for the upstream. */
const REQUEST_OWN = new Set(['host', 'content-length', 'accept-encoding', 'expect'])

function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined
  const joined = Array.isArray(value) ? value.join(',') : value
  const out = new Set<string>()
  for (const t of joined.split(',')) {
    const name = t.trim().toLowerCase()
    if (name !== '' && name !== 'close' && name !== 'keep-alive') out.add(name)
  }
  return out.size === 0 ? undefined : out
}

/**
 * Headers for the upstream request: the client's, less hop-by-hop and connection-named
 * ones, less those the gateway computes (host, content-length, accept-encoding: the
 * gateway reads the response, so it asks for it uncompressed).
 */
/** The client's credentials, dropped when they were the gateway's (a tenant's API key). */
const CREDENTIALS = new Set(['authorization', 'x-api-key'])

export function upstreamRequestHeaders(
  incoming: IncomingHttpHeaders,
  dropCredentials = false,
): Record<string, string | string[]> {
  const named = connectionTokens(incoming.connection)
  const out: Record<string, string | string[]> = {}
  for (const key in incoming) {
    if (HOP_BY_HOP.has(key) || REQUEST_OWN.has(key) || named?.has(key)) continue
    if (dropCredentials && CREDENTIALS.has(key)) continue
    const v = incoming[key]
    if (v !== undefined) out[key] = v
  }
  return out
}

/** Headers for the client's response: the upstream's, less hop-by-hop and connection-named ones. */
export function clientResponseHeaders(upstream: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = connectionTokens(upstream.connection)
  const out: OutgoingHttpHeaders = {}
  for (const key in upstream) {
    if (HOP_BY_HOP.has(key) || named?.has(key)) continue
    const v = upstream[key]
    if (v !== undefined) out[key] = v
  }
  return out
}
