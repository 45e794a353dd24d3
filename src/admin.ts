/**
 * The admin listener's routes (not for tenants): /healthz, /readyz, /metrics, /admin/state.
 * The admin token, when set, guards them all but the probes (admin-auth.ts).
 */
import type { FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'

export interface AdminSources {
  readonly registry: Registry
  readonly ready: () => boolean
  readonly draining: () => boolean
  readonly state: () => unknown
}

export function registerAdminRoutes(admin: FastifyInstance, src: AdminSources): void {
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
