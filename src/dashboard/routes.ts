/**
 * The dashboard's routes on the admin listener: the page and its own script, styles and
 * icon (web/dashboard/, read once at startup; no data in them, so they stay public when
 * server.admin_token is set), /dashboard/auth (whether the page must ask for the token)
 * and /dashboard/data (the JSON it draws, behind the token like /admin/state).
 */
import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import type { DashboardData } from './data.js'

const ASSETS = new URL('../../web/dashboard/', import.meta.url)

/** path -> [file in web/dashboard, content type] */
const FILES: Record<string, [string, string]> = {
  '/dashboard': ['index.html', 'text/html; charset=utf-8'],
  '/dashboard/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/dashboard/charts.js': ['charts.js', 'text/javascript; charset=utf-8'],
  '/dashboard/style.css': ['style.css', 'text/css; charset=utf-8'],
  '/dashboard/icon.svg': ['icon.svg', 'image/svg+xml'],
}

/** The paths that hold no data: open without the admin token. */
export const DASHBOARD_PUBLIC_PATHS: readonly string[] = [...Object.keys(FILES), '/dashboard/auth']

/** Everything from this origin only: no CDN, no inline script, nothing sent elsewhere. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

export interface DashboardRoutes {
  readonly tokenRequired: boolean
  readonly data: () => Promise<DashboardData>
}

export function registerDashboard(admin: FastifyInstance, src: DashboardRoutes): void {
  for (const [path, [file, type]] of Object.entries(FILES)) {
    const body = readFileSync(new URL(file, ASSETS))
    admin.get(path, (_req, reply) =>
      reply
        .type(type)
        .header('cache-control', 'no-cache')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', CSP)
        .header('referrer-policy', 'no-referrer')
        .send(body),
    )
  }
  admin.get('/dashboard/auth', (_req, reply) =>
    reply.header('cache-control', 'no-store').send({ tokenRequired: src.tokenRequired }),
  )
  admin.get('/dashboard/data', async (_req, reply) => {
    const data = await src.data()
    return reply.header('cache-control', 'no-store').send(data)
  })
}
