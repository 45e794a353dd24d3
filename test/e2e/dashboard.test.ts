/**
 * The dashboard in a real browser: `slo-gateway serve` (its own process, the built-in
 * simulator) with an admin token, a little mixed traffic with refusals (a tenant over its
 * RPM, a burst over the interactive queue), then /dashboard in headless Chromium. Without
 * the token the page shows a prompt and no data; with it, each panel shows what
 * /admin/state (and /metrics) say, the page asks nothing of any other origin, and the
 * console stays clean. A screenshot goes to reports/dashboard.png for a person to look at.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/tenants/directory.js'
import { Browser, type Page } from '../helpers/chromium.js'
import { type GatewayProcess, startGatewayProcess } from '../helpers/gateway-process.js'

const TOKEN = 'admin-token-for-the-dashboard-test'
const ACME = 'sk-acme-dashboard-0123456789'
const TINY = 'sk-tiny-dashboard-0123456789'
const REPORTS = join(import.meta.dirname, '..', '..', 'reports')

type Stats = {
  offered: number
  admitted: number
  good: number
  rejected: number
  attainment: number | null
  attainmentAdmitted: number | null
  rejectionsByReason: Record<string, number>
  degradationsByAction: Record<string, number>
  ttftMs: { p50: number | null; p99: number | null }
  tpotMs: { p50: number | null; p99: number | null }
}
type AdminState = {
  backends: { pools: { name: string; endpoints: { name: string; status: string }[] }[] }
  admission: { pools: { pool: string; classes: Record<string, { queued: number }> }[] }
  slo: { windows: Record<string, { '5m': Stats }> }
}

async function chat(gw: GatewayProcess, key: string, cls: string, words: number, maxTokens: number) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-priority': cls },
    body: JSON.stringify({
      model: 'sim/tiny',
      max_tokens: maxTokens,
      // interactive streams (its TTFT is measured, and the estimator's prediction with it)
      stream: cls === 'interactive',
      messages: [{ role: 'user', content: Array.from({ length: words }, (_, i) => `word${i}`).join(' ') }],
    }),
  })
  await res.arrayBuffer()
  return res.status
}

const admin = async <T>(gw: GatewayProcess, path: string, token = TOKEN) => {
  const res = await fetch(`${gw.adminUrl}${path}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  })
  return { status: res.status, body: (path === '/metrics' ? await res.text() : await res.json()) as T }
}

describe('the dashboard in headless Chromium', () => {
  let gw: GatewayProcess
  let browser: Browser
  let page: Page
  const statuses: number[] = []

  beforeAll(async () => {
    gw = await startGatewayProcess({
      server: { admin_token: TOKEN },
      simulator: { enabled: true, profile: 'tiny', replicas: 2, time_scale: 1 },
      backends: { pools: [{ name: 'sim', models: ['sim/tiny', '*'], cost_per_hour: 3.6 }] },
      telemetry: { cost_interval_ms: 500 },
      tenants: [
        { id: 'acme', api_keys: [hashKey(ACME)] },
        { id: 'tiny', api_keys: [hashKey(TINY)], limits: { rpm: 3 } },
      ],
      classes: { interactive: { queue_limit: 1 } },
    })
    // a little mixed traffic: interactive and batch, then a tenant over its RPM, then a
    // burst of long interactive requests over a queue of one
    const mixed = []
    for (let i = 0; i < 10; i++)
      mixed.push(chat(gw, ACME, i % 3 === 0 ? 'batch' : 'interactive', 20 + i * 10, 16))
    statuses.push(...(await Promise.all(mixed)))
    for (let i = 0; i < 6; i++) statuses.push(await chat(gw, TINY, 'interactive', 10, 8))
    const burst = []
    for (let i = 0; i < 16; i++) burst.push(chat(gw, ACME, 'interactive', 700, 400))
    statuses.push(...(await Promise.all(burst)))
    await new Promise((r) => setTimeout(r, 1_200)) // a cost interval closes
    browser = await Browser.launch()
    page = await browser.newPage(1440, 900)
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await gw?.stop()
  })

  it('drove traffic with successes and refusals', () => {
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(5)
    expect(statuses).toContain(429)
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0)
  })

  it('shows a token prompt and no data without the token', async () => {
    expect((await admin(gw, '/dashboard/data', '')).status).toBe(401)
    expect((await admin(gw, '/admin/state', '')).status).toBe(401)
    await page.goto(`${gw.adminUrl}/dashboard`)
    await page.until(`!document.querySelector('#login').hidden`)
    const shown = await page.eval<{ main: number; refreshes?: string; text: string }>(
      `({ main: document.querySelector('#main').childElementCount, refreshes: document.body.dataset.refreshes, text: document.body.innerText })`,
    )
    expect(shown.main).toBe(0)
    expect(shown.refreshes).toBeUndefined()
    expect(shown.text).toContain('admin token')
    expect(shown.text).not.toContain('acme')
    expect(page.requests().some((u) => u.includes('/dashboard/data'))).toBe(false)
  })

  it('with the token, draws every panel from the same figures as /admin/state', async () => {
    await page.eval(`document.querySelector('#token').focus()`)
    await page.type(TOKEN)
    await page.eval(`document.querySelector('#login').requestSubmit()`)
    await page.until(`Number(document.body.dataset.refreshes) >= 2`)
    const state = (await admin<AdminState>(gw, '/admin/state')).body
    const shown = await page.eval<Record<string, Record<string, Record<string, string>>>>(`(() => {
      const out = {}
      for (const sec of document.querySelectorAll('section.class')) {
        const panels = {}
        for (const p of sec.querySelectorAll('[data-panel]')) panels[p.dataset.panel] = { ...p.dataset,
          rects: String(p.querySelectorAll('svg rect').length), paths: String(p.querySelectorAll('svg path').length),
          dots: String(p.querySelectorAll('svg circle.dot').length),
          bars: JSON.stringify([...p.querySelectorAll('.bar')].map((b) => [b.className, b.dataset.key, Number(b.dataset.count)])) }
        out[sec.dataset.class] = panels
      }
      return out
    })()`)
    expect(Object.keys(shown).sort()).toEqual(Object.keys(state.slo.windows).sort())
    const str = (v: number | null) => (v === null ? '' : String(v))
    let rejected = 0
    for (const [cls, windows] of Object.entries(state.slo.windows)) {
      const w = windows['5m']
      const p = shown[cls]!
      expect(p.rates, cls).toMatchObject({
        offered: String(w.offered),
        admitted: String(w.admitted),
        good: String(w.good),
        rejected: String(w.rejected),
      })
      expect(p.attainment).toMatchObject({
        attainment: str(w.attainment),
        attainmentAdmitted: str(w.attainmentAdmitted),
      })
      expect(p.ttft).toMatchObject({ p50: str(w.ttftMs.p50), p99: str(w.ttftMs.p99) })
      expect(p.tpot).toMatchObject({ p50: str(w.tpotMs.p50), p99: str(w.tpotMs.p99) })
      const queued = state.admission.pools.reduce((a, pl) => a + (pl.classes[cls]?.queued ?? 0), 0)
      expect(p.queue?.queued).toBe(String(queued))
      const bars = JSON.parse(p.refusals!.bars!) as [string, string, number][]
      expect(
        Object.fromEntries(bars.filter((b) => b[0].includes('refused')).map((b) => [b[1], b[2]])),
      ).toEqual(w.rejectionsByReason)
      expect(
        Object.fromEntries(bars.filter((b) => b[0].includes('degraded')).map((b) => [b[1], b[2]])),
      ).toEqual(w.degradationsByAction)
      if (w.offered > 0) expect(Number(p.rates!.rects)).toBeGreaterThan(0)
      if (w.ttftMs.p50 !== null) expect(Number(p.ttft!.paths)).toBeGreaterThan(0)
      rejected += w.rejected
    }
    expect(rejected).toBeGreaterThan(0)
    const interactive = state.slo.windows.interactive!['5m']
    expect(Object.keys(interactive.rejectionsByReason)).toEqual(expect.arrayContaining(['rate_limited']))

    // the scatter: the estimator's predictions of the interactive requests served
    const data = (await admin<{ scatter: Record<string, { points: unknown[] }> }>(gw, '/dashboard/data')).body
    const dots = Number(shown.interactive!.scatter!.dots)
    expect(dots).toBeGreaterThan(0)
    expect(dots).toBe(Number(shown.interactive!.scatter!.points))
    expect(dots).toBe(data.scatter.interactive!.points.length)

    // backends: every endpoint, with the status /admin/state gives it
    const rows = await page.eval<[string, string][]>(
      `[...document.querySelectorAll('[data-panel=backends] tr[data-endpoint]')].map((r) => [r.dataset.endpoint, r.dataset.status])`,
    )
    const endpoints = state.backends.pools.flatMap((p) => p.endpoints.map((e) => [e.name, e.status]))
    expect(rows.sort()).toEqual(endpoints.sort())
    expect(rows.length).toBe(2)

    // tenants: the tokens /metrics counted for each tenant
    const metrics = (await admin<string>(gw, '/metrics')).body
    const tokens: Record<string, number> = {}
    for (const m of metrics.matchAll(/^slo_gateway_tokens_total\{([^}]*)\} (\S+)$/gm)) {
      const tenant = /tenant="([^"]*)"/.exec(m[1]!)?.[1] ?? ''
      tokens[tenant] = (tokens[tenant] ?? 0) + Number(m[2])
    }
    const tenantRows = await page.eval<[string, number][]>(
      `[...document.querySelectorAll('[data-panel=tenants] tr[data-tenant]')].map((r) => [r.dataset.tenant, Number(r.dataset.tokens)])`,
    )
    expect(Object.fromEntries(tenantRows)).toEqual(tokens)
    expect(tenantRows.map((r) => r[0])).toContain('acme')
  })

  it('asks nothing of any other origin, logs no error, and leaves a screenshot', async () => {
    const origin = new URL(gw.adminUrl).origin
    const requests = page.requests().filter((u) => u !== 'about:blank')
    expect(requests.length).toBeGreaterThan(5)
    expect(requests.filter((u) => new URL(u).origin !== origin)).toEqual([])
    expect(page.errors()).toEqual([])
    mkdirSync(REPORTS, { recursive: true })
    writeFileSync(join(REPORTS, 'dashboard.png'), await page.screenshot())
  })
})
