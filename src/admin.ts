/**
 * The admin listener's routes (not for tenants): /healthz, /readyz, /metrics, /admin/state.
 * With `server.admin_token_sha256` set, every route but the probes (/healthz, /readyz)
 * asks for `Authorization: Bearer TOKEN` (401 without it).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'
import { errorHeaders, GatewayError } from './errors.js'
import { apiKeyOf } from './tenants/identify.js'

const OPEN = new Set(['/healthz', '/readyz'])

/** Whether `headers` carry the bearer token whose SHA-256 is `hash` (compared in constant time). */
function holdsToken(headers: Record<string, string | string[] | undefined>, hash: Buffer): boolean {
  const token = apiKeyOf(headers)
  if (token === undefined) return false
  return timingSafeEqual(createHash('sha256').update(token).digest(), hash)
}

export interface AdminSources {
  /** SHA-256 hex of the admin bearer token; undefined: the admin routes are open. */
  readonly token?: string | undefined
  readonly registry: Registry
  readonly ready: () => boolean
  readonly draining: () => boolean
  readonly state: () => unknown
}

export function registerAdminRoutes(admin: FastifyInstance, src: AdminSources): void {
  if (src.token !== undefined) {
    const hash = Buffer.from(src.token, 'hex')
    admin.addHook('onRequest', async (req, reply) => {
      if (OPEN.has(req.url.split('?')[0] ?? '') || holdsToken(req.headers, hash)) return
      const err = new GatewayError(
        apiKeyOf(req.headers) === undefined ? 'GW_ERR_MISSING_API_KEY' : 'GW_ERR_INVALID_API_KEY',
      )
      return reply.code(err.status).headers(errorHeaders(err)).send(err.toJSON())
    })
  }
  admin.get('/healthz', async () => ({ status: 'ok' }))
  admin.get('/readyz', async (_req, reply) => {
    if (src.draining()) return reply.code(503).send({ status: 'draining' })
    if (!src.ready())
      return reply.code(503).send({ status: 'not ready', reason: 'no backend has fresh load data' })
    return { status: 'ready' }
  })
  admin.get('/metrics', async (_req, reply) => {
    const text = await src.registry.metrics()
    return reply.type(src.registry.contentType).send(text)
  })
  admin.get('/admin/state', async () => src.state())
}
