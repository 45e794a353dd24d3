/**
 * Telemetry through the real gateway (plain proxy: no admission) and the simulator: a small
 * deterministic scenario, then the counters and histogram counts read from the admin
 * /metrics must equal the expected numbers exactly, and `promtool check metrics` must pass
 * on that text (CI: promtool required; locally skipped if missing).
 *
 * Verdicts are made deterministic by margins, not by timing luck: the class TTFT SLO is
 * 1 s; normal requests take milliseconds on the `tiny` profile, and "slow" ones run with
 * the simulator slowed 600x (one engine step >= 1.2 s). Degradation and capacity
 * refusals other than `draining` need admission, which this plain-proxy stack does not run;
 * the unit scenario (test/unit/telemetry/scenario.test.ts) covers them on constructed tickets.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { Registry } from 'prom-client'
import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type BackendsHandle, createBackends } from '../../../src/backends/index.js'
import { systemClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { buildHttpApps, type HttpApps } from '../../../src/http-apps.js'
import { createLogger } from '../../../src/logger.js'
import { type SimHandle, startSim } from '../../../src/sim/index.js'
import { createTelemetry, METRICS, type Telemetry } from '../../../src/telemetry/index.js'

const MODEL = 'sim/tiny'

interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Minimal reader of the Prometheus text format (enough for our own output). */
function parseText(text: string): Sample[] {
  const out: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line)
    if (m === null) continue
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!
    out.push({ name: m[1]!, labels, value: Number(m[3]) })
  }
  return out
}

function sum(samples: Sample[], name: string, match: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0)
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const start = performance.now()
  while (!check()) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('telemetry through gateway and simulator', () => {
  let sim: SimHandle
  let backends: BackendsHandle
  let telemetry: Telemetry
  let gateway: HttpApps
  let url = ''
  let adminUrl = ''
  /** The test's own client, so a request it aborts leaves no socket in a shared pool. */
  const client = new Agent()

  beforeAll(async () => {
    sim = await startSim({ replicas: 1, port: 0, profile: 'tiny', host: '127.0.0.1' })
    const raw = {
      auth: { anonymous: 'default' },
      server: { port: 0, admin_port: 0, host: '127.0.0.1', admin_host: '127.0.0.1' },
      classes: { interactive: { slo: { ttft_ms: 1_000, tpot_ms: 5_000 } } },
      backends: {
        pools: [
          { name: 'sim', models: [MODEL], endpoints: sim.replicas.map((r) => r.url), cost_per_hour: 36 },
        ],
      },
      telemetry: { summary_interval_ms: 0 },
    }
    const config = configSchema.parse(raw)
    const registry = new Registry()
    backends = createBackends(config, { clock: systemClock, registry })
    telemetry = createTelemetry(config, { registry, clock: systemClock, backends })
    const sink = new Writable({ write: (_c, _e, cb) => cb() })
    gateway = buildHttpApps(config, {
      clock: systemClock,
      logger: createLogger('info', sink),
      registry,
      backends,
      recorder: telemetry,
    })
    backends.start()
    await gateway.app.listen({ port: 0, host: '127.0.0.1' })
    await gateway.admin.listen({ port: 0, host: '127.0.0.1' })
    url = `http://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}`
    adminUrl = `http://127.0.0.1:${(gateway.admin.server.address() as AddressInfo).port}`
    await until(() => backends.ready(), 5_000, 'a fresh backend')
  })

  afterAll(async () => {
    telemetry?.close()
    await client?.destroy()
    await gateway?.app.close()
    await gateway?.admin.close()
    await backends?.close()
    await sim?.close()
  })

  const chat = async (body: Record<string, unknown>, abort?: { signal: AbortSignal; dispatcher: Agent }) => {
    try {
      const res = await request(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: MODEL,
          messages: [{ role: 'user', content: 'hello telemetry' }],
          ...body,
        }),
        dispatcher: abort?.dispatcher ?? client,
        ...(abort === undefined ? {} : { signal: abort.signal }),
      })
      await res.body.text()
      return res.statusCode
    } catch {
      return 0
    }
  }
  const faults = async (spec: Record<string, unknown>) => {
    const res = await request(`${sim.replicas[0]!.url}/admin/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(spec),
      dispatcher: client,
    })
    await res.body.text()
  }

  /** Wait until the endpoint's load is fresh and it is not ejected (after a fault). */
  const fresh = () =>
    until(
      () =>
        backends
          .pools()[0]!
          .endpoints()
          .every((e) => e.loadAt !== undefined && systemClock.now() - e.loadAt < 200) && backends.ready(),
      10_000,
      'fresh load data',
    )

  it('counts a scenario exactly', async () => {
    const fast = { max_tokens: 8, ignore_eos: true }
    // 4 good streamed, 2 good non-streamed.
    for (const s of await Promise.all([1, 2, 3, 4].map(() => chat({ ...fast, stream: true }))))
      expect(s).toBe(200)
    for (const s of await Promise.all([1, 2].map(() => chat(fast)))) expect(s).toBe(200)
    // 2 forced slow (TTFT >= 1.2 s > 1 s SLO), 1 cancelled by the client before its first token.
    await faults({ slowdown: 600 })
    const ac = new AbortController()
    const aborting = new Agent()
    const slow = [1, 2].map(() => chat({ max_tokens: 2, ignore_eos: true, stream: true }))
    const cancelled = chat({ max_tokens: 2, stream: true }, { signal: ac.signal, dispatcher: aborting })
    setTimeout(() => ac.abort(), 300)
    expect(await Promise.all(slow)).toEqual([200, 200])
    expect(await cancelled).toBe(0)
    await aborting.destroy()
    await faults({})
    await fresh()
    // 3 invalid: two bodies that are not JSON objects, one unknown model.
    const bad = async (body: string) => {
      const res = await request(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        dispatcher: client,
      })
      await res.body.text()
      return res.statusCode
    }
    expect(await bad('{not json')).toBe(400)
    expect(await bad('[1,2]')).toBe(400)
    expect(await chat({ model: 'no-such-model' })).toBe(404)
    // 2 upstream errors (503 from the model server).
    await faults({ errorRate: 1, errorStatus: 503 })
    expect(await chat(fast)).toBe(503)
    expect(await chat(fast)).toBe(503)
    await faults({})
    await fresh()
    // 2 refused: the gateway is draining.
    gateway.drain()
    expect(await chat(fast)).toBe(503)
    expect(await chat(fast)).toBe(503)
    gateway.pipeline.draining = false

    await until(() => gateway.pipeline.inFlight === 0, 5_000, 'no request in flight')
    const res = await request(`${adminUrl}/metrics`, { dispatcher: client })
    const text = await res.body.text()
    const s = parseText(text)

    const outcomes: Record<string, number> = {}
    for (const x of s.filter((x) => x.name === METRICS.requests)) {
      outcomes[x.labels.outcome!] = (outcomes[x.labels.outcome!] ?? 0) + x.value
    }
    expect(outcomes).toEqual({ ok: 8, cancelled: 1, invalid: 3, upstream_error: 2, rejected: 2 })
    expect(sum(s, METRICS.goodRequests)).toBe(6)
    expect(sum(s, METRICS.sloMissed, { slo: 'ttft' })).toBe(2)
    expect(sum(s, METRICS.sloMissed)).toBe(2)
    expect(sum(s, METRICS.rejected, { reason: 'draining' })).toBe(2)
    expect(sum(s, METRICS.rejected)).toBe(2)
    expect(sum(s, METRICS.errors, { kind: 'upstream_5xx' })).toBe(2)
    expect(sum(s, METRICS.errors)).toBe(2)
    expect(sum(s, METRICS.degradedRequests)).toBe(0) // no admission: nothing degrades
    // Output tokens reported by the upstream: 6 x 8 (good) + 2 x 2 (slow); none for the others.
    expect(sum(s, METRICS.tokens, { kind: 'completion' })).toBe(52)
    expect(sum(s, METRICS.goodTokens)).toBe(48)
    // Histograms: TTFT/TPOT for the 6 successful streamed requests, E2E for all 8.
    expect(sum(s, `${METRICS.ttft}_count`)).toBe(6)
    expect(sum(s, `${METRICS.ttft}_bucket`, { le: '1' })).toBe(4)
    expect(sum(s, `${METRICS.tpot}_count`)).toBe(6)
    expect(sum(s, `${METRICS.e2e}_count`)).toBe(8)
    expect(sum(s, `${METRICS.itl}_count`)).toBe(4 * 7 + 2 * 1)
    // Every dispatched request waited (0 ms here) in no queue: 8 ok + 1 cancelled + 2 errors.
    expect(sum(s, `${METRICS.queueWait}_count`)).toBe(11)

    const promtool = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((p) => existsSync(p))
    if (promtool === undefined) {
      if (process.env.CI) throw new Error('promtool is required in CI (Debian package `prometheus`)')
      return
    }
    const check = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' })
    expect(`${check.stdout}${check.stderr}`.trim()).toBe('')
    expect(check.status).toBe(0)
  }, 60_000)
})
