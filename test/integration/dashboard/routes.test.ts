/**
 * The dashboard's routes and the admin token, on the real runtime (the built-in simulator
 * behind it): the page and its files are public and hold no data; /dashboard/data,
 * /admin/state and /metrics need the token; the data is the windows /admin/state shows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { configSchema } from '../../../src/config/schema.js'
import { DASHBOARD_DATA_VERSION, type DashboardData } from '../../../src/dashboard/index.js'
import { createLogger } from '../../../src/logger.js'
import { createRuntime, type GatewayRuntime } from '../../../src/runtime.js'

const TOKEN = 'test-admin-token-0123456789'

describe('GET /dashboard and /dashboard/data', () => {
  let rt: GatewayRuntime
  beforeAll(async () => {
    const config = configSchema.parse({
      auth: { anonymous: 'demo' },
      server: { port: 0, admin_port: 0, admin_token: TOKEN },
      log: { level: 'warn' },
      simulator: { enabled: true, profile: 'tiny', replicas: 1 },
    })
    rt = await createRuntime(config, createLogger('warn'))
    await rt.apps.app.ready()
    for (let i = 0; i < 100 && !rt.apps.ready(); i++) await new Promise((r) => setTimeout(r, 20))
    for (let i = 0; i < 3; i++) {
      const res = await rt.apps.app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        payload: {
          model: 'sim/tiny',
          max_tokens: 4,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        },
      })
      expect(res.statusCode).toBe(200)
    }
  })
  afterAll(async () => {
    await rt.apps.app.close()
    await rt.apps.admin.close()
    await rt.close()
  })

  const get = (url: string, token?: string) =>
    rt.apps.admin.inject({ url, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } })

  it('serves the page and its files without the token, with a CSP that allows this origin only', async () => {
    for (const [url, type] of [
      ['/dashboard', 'text/html'],
      ['/dashboard/app.js', 'text/javascript'],
      ['/dashboard/charts.js', 'text/javascript'],
      ['/dashboard/style.css', 'text/css'],
      ['/dashboard/icon.svg', 'image/svg+xml'],
    ] as const) {
      const res = await get(url)
      expect(res.statusCode, url).toBe(200)
      expect(res.headers['content-type']).toContain(type)
      expect(res.headers['content-security-policy']).toContain("default-src 'none'")
      expect(res.headers['content-security-policy']).toContain("connect-src 'self'")
      // no data and no address of anything outside in the static files
      expect(res.body).not.toMatch(/https?:\/\/(?!www\.w3\.org)/)
      expect(res.body).not.toContain('demo')
    }
    expect(JSON.parse((await get('/dashboard/auth')).body)).toEqual({ tokenRequired: true })
    expect((await get('/healthz')).statusCode).toBe(200)
  })

  it('refuses the data, /admin/state and /metrics without the right token', async () => {
    for (const url of ['/dashboard/data', '/admin/state', '/metrics']) {
      for (const token of [undefined, 'wrong-token-0123456789', `${TOKEN}x`]) {
        const res = await get(url, token)
        expect(res.statusCode, `${url} ${token}`).toBe(401)
        expect(res.headers['www-authenticate']).toBe('Bearer')
        expect(JSON.parse(res.body).error.code).toBe('GW_ERR_ADMIN_UNAUTHORIZED')
        expect(res.body).not.toContain(TOKEN)
      }
      expect((await get(url, TOKEN)).statusCode).toBe(200)
    }
    expect(
      (await rt.apps.admin.inject({ url: '/admin/state', headers: { authorization: TOKEN } })).statusCode,
    ).toBe(401)
  })

  it('gives the windows, queues, backends and series that /admin/state is built from', async () => {
    const data = JSON.parse((await get('/dashboard/data', TOKEN)).body) as DashboardData
    const state = JSON.parse((await get('/admin/state', TOKEN)).body) as {
      slo: { windows: Record<string, { '5m': { offered: number; good: number } }> }
      backends: { pools: { endpoints: { name: string }[] }[] }
    }
    expect(data.version).toBe(DASHBOARD_DATA_VERSION)
    expect(data.refreshMs).toBe(1000)
    expect(data.telemetry).toBe(true)
    expect(data.classes.map((c) => c.name)).toEqual(['interactive', 'batch'])
    expect(data.classes[0]).toMatchObject({
      ttftMs: 500,
      tpotMs: 50,
      attainmentTarget: 0.99,
      maxKvUsage: 0.8,
    })
    expect(data.windows.interactive!['5m'].offered).toBe(3)
    expect(data.windows.interactive!['5m'].offered).toBe(state.slo.windows.interactive!['5m'].offered)
    expect(data.series.interactive!.offered.reduce((a, b) => a + b, 0)).toBe(3)
    expect(data.queues).toEqual([
      { pool: 'sim', class: 'interactive', queued: 0, inflight: 0, oldestWaitMs: 0 },
      { pool: 'sim', class: 'batch', queued: 0, inflight: 0, oldestWaitMs: 0 },
    ])
    expect(data.backends.map((b) => b.name)).toEqual(state.backends.pools[0]!.endpoints.map((e) => e.name))
    expect(data.backends[0]).toMatchObject({
      pool: 'sim',
      status: 'ready',
      up: true,
      ejected: false,
      usable: true,
    })
    expect(data.backends[0]!.scrapeAgeMs).toBeGreaterThanOrEqual(0)
    expect(data.scatter.interactive!.points.length).toBe(3)
    expect(data.tenants.map((t) => t.tenant)).toEqual(['demo'])
    expect(data.estimator[0]).toMatchObject({ pool: 'sim' })
  })
})
