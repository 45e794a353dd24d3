/**
 * The admin listener's bearer token (server.admin_token, or its SHA-256 as
 * server.admin_token_sha256, so the secret need not sit in the file). When one is set, every admin
 * route needs `Authorization: Bearer <token>` except the probes (/healthz, /readyz) and
 * the paths the caller names public (the dashboard's page and its static files, which
 * hold no data). A missing or wrong token gets 401 GW_ERR_ADMIN_UNAUTHORIZED. Tokens are
 * compared as SHA-256 digests in constant time, so neither their length nor a prefix leaks.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { errorHeaders, GatewayError } from './errors.js'

const BEARER = /^\s*Bearer\s+(\S+)\s*$/i
const PROBES = ['/healthz', '/readyz']

const digest = (s: string): Buffer => createHash('sha256').update(s).digest()

/** True when `header` carries exactly the token whose digest is `want`. */
export function bearerMatches(header: string | undefined, want: Buffer): boolean {
  if (header === undefined) return false
  const m = BEARER.exec(header)
  return m !== null && timingSafeEqual(digest(m[1]!), want)
}

/** The digest admin requests must match: of server.admin_token, or server.admin_token_sha256; undefined: open. */
export function adminTokenDigest(server: {
  readonly admin_token?: string | undefined
  readonly admin_token_sha256?: string | undefined
}): Buffer | undefined {
  if (server.admin_token !== undefined) return digest(server.admin_token)
  if (server.admin_token_sha256 !== undefined) return Buffer.from(server.admin_token_sha256, 'hex')
  return undefined
}

export function protectAdmin(admin: FastifyInstance, want: Buffer, publicPaths: Iterable<string>): void {
  const open = new Set([...PROBES, ...publicPaths])
  const refusal = new GatewayError('GW_ERR_ADMIN_UNAUTHORIZED', {})
  const headers = errorHeaders(refusal)
  const body = refusal.toJSON()
  admin.addHook('onRequest', (req, reply, done) => {
    const q = req.url.indexOf('?')
    const path = q < 0 ? req.url : req.url.slice(0, q)
    if (open.has(path) || bearerMatches(req.headers.authorization, want)) {
      done()
      return
    }
    reply.code(refusal.status).headers(headers).send(body)
  })
}
