/**
 * The fault suite, on real processes: `slo-gateway serve` in front of two simulators, each
 * its own `slo-gateway sim` process. Under a wave of streams, one fault at a time: a
 * simulator crashing mid-stream, hanging before its headers and after them, slowing down,
 * answering 5xx to everything, its /metrics frozen or failing, every endpoint of the pool
 * down. For each: every request ends within its timeout with a response or a clean final
 * error event (never a cut connection), the gateway stays up, and once the fault is gone
 * and the wave over, nothing is held (requests in flight, queues, ledger, prefill budget),
 * the metrics counted the failures, and it serves again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type GatewayProcess, startGatewayProcess, untilReady } from '../../helpers/gateway-process.js'
import { settledResidue } from '../../helpers/residue.js'
import { type SimProcess, startSimProcess } from '../../helpers/sim-process.js'
import { sleep } from '../../helpers/upstream.js'
import { metricSum, streamOnce, wave } from './load-wave.js'

const WAVE = 16

describe('fault suite: gateway and simulators as processes', { timeout: 120_000 }, () => {
  let a: SimProcess
  let b: SimProcess
  let gw: GatewayProcess

  beforeAll(async () => {
    ;[a, b] = await Promise.all([startSimProcess(), startSimProcess()])
    gw = await startGatewayProcess({
      auth: { anonymous: 'anon' },
      upstream: { body_timeout_ms: 2_000, connect_timeout_ms: 1_000 },
      backends: {
        pools: [
          {
            name: 'sim',
            models: ['*'],
            endpoints: [a.url, b.url],
            scrape_interval_ms: 100,
            stale_after_ms: 500,
            ejection: { base_ejection_ms: 500, max_ejection_ms: 2_000 },
          },
        ],
      },
      classes: { interactive: { slo: { ttft_ms: 2_000, tpot_ms: 200 }, max_queue_wait_ms: 10_000 } },
    })
    // listening is not ready: until a first scrape, a request is refused 503 no_backend
    await untilReady(gw.adminUrl)
  }, 90_000)
  afterAll(async () => {
    await gw?.stop()
    await Promise.all([a?.stop(), b?.stop()])
  })

  const metrics = async () => (await fetch(`${gw.adminUrl}/metrics`)).text()
  const failed = async () => metricSum(await metrics(), 'slo_gateway_requests_total', { outcome: 'failed' })
  const healthy = async () => {
    expect((await fetch(`${gw.adminUrl}/healthz`)).status).toBe(200)
  }
  /** After the fault: clear it, let the endpoints come back, check nothing is held and it serves. */
  const recovered = async () => {
    await Promise.all([a.start(), b.start()])
    await Promise.all([a.setFaults({}), b.setFaults({})])
    expect(await settledResidue(gw.adminUrl, {}, 20_000)).toEqual([])
    let ok = 0
    for (let i = 0; i < 60 && ok < 4; i++) {
      if ((await streamOnce(gw.url, { maxTokens: 4 })) === 'complete') ok++
      else await sleep(250)
    }
    expect(ok).toBe(4)
    await healthy()
  }
  const clean = (counts: Record<string, number>) => {
    expect(counts.cut ?? 0, JSON.stringify(counts)).toBe(0)
    expect(counts.timeout ?? 0, JSON.stringify(counts)).toBe(0)
    const total = Object.values(counts).reduce((x, y) => x + y, 0)
    expect(total).toBe(WAVE)
  }

  it('serves a wave without faults, holding nothing after', async () => {
    const counts = await wave(gw.url, WAVE)
    clean(counts)
    expect(counts.complete).toBe(WAVE)
    expect(await settledResidue(gw.adminUrl)).toEqual([])
  })

  it('a simulator crashing mid-stream: its streams end with an error event, the other serves', async () => {
    const before = await failed()
    const running = wave(gw.url, WAVE, { maxTokens: 256 })
    await sleep(600)
    await a.kill()
    const counts = await running
    clean(counts)
    expect(counts['error-event'] ?? 0).toBeGreaterThan(0)
    expect(await failed()).toBeGreaterThanOrEqual(before + (counts['error-event'] ?? 0))
    await healthy()
    await recovered()
  })

  it('a crash fault (the process exits on the next request): answered, not hung', async () => {
    await a.setFaults({ crashAfter: 0 })
    const counts = await wave(gw.url, WAVE)
    clean(counts)
    await recovered()
  })

  it('a simulator hanging before its headers: 504 within its timeout, then ejected', async () => {
    await a.setFaults({ hang: true })
    const counts = await wave(gw.url, WAVE)
    clean(counts)
    for (const k of Object.keys(counts)) expect(['complete', 'status 504', 'status 503'], k).toContain(k)
    await recovered()
  })

  it('a simulator hanging after its headers (a stall mid-stream): a final error event at the body timeout', async () => {
    const running = wave(gw.url, WAVE, { maxTokens: 512 })
    await sleep(600)
    await Promise.all([a.setFaults({ slowdown: 10_000 }), b.setFaults({ slowdown: 10_000 })])
    const counts = await running
    clean(counts)
    expect(counts['error-event'] ?? 0).toBeGreaterThan(0)
    await recovered()
  })

  it('a slow-down: requests finish late or are refused, none is lost', async () => {
    await Promise.all([a.setFaults({ slowdown: 8 }), b.setFaults({ slowdown: 8 })])
    const counts = await wave(gw.url, WAVE, { maxTokens: 16, timeoutMs: 60_000 })
    clean(counts)
    await recovered()
  })

  it('a 5xx storm: every answer relayed or refused at once, each counted as a failure', async () => {
    const notOk = async () => {
      const m = await metrics()
      return ['upstream_error', 'rejected', 'failed'].reduce(
        (n, outcome) => n + metricSum(m, 'slo_gateway_requests_total', { outcome }),
        0,
      )
    }
    const before = await notOk()
    await Promise.all([
      a.setFaults({ errorRate: 1, errorStatus: 500 }),
      b.setFaults({ errorRate: 1, errorStatus: 503 }),
    ])
    const counts = await wave(gw.url, WAVE * 2)
    expect(counts.cut ?? 0).toBe(0)
    expect(counts.timeout ?? 0).toBe(0)
    expect(counts.complete ?? 0).toBe(0)
    expect((await notOk()) - before).toBe(WAVE * 2)
    await recovered()
  })

  it('/metrics frozen, then failing, on every endpoint: fail closed (503 no_backend) fast, then recover', async () => {
    await Promise.all([a.setFaults({ metrics: 'stale' }), b.setFaults({ metrics: 'stale' })])
    await sleep(1_200) // past stale_after_ms
    const stale = await wave(gw.url, WAVE)
    clean(stale)
    await Promise.all([a.setFaults({ metrics: 'failing' }), b.setFaults({ metrics: 'failing' })])
    await sleep(1_200)
    const failing = await wave(gw.url, WAVE)
    clean(failing)
    expect(failing['status 503'] ?? 0).toBeGreaterThan(0)
    expect((await fetch(`${gw.adminUrl}/readyz`)).status).toBe(503)
    await healthy()
    await recovered()
  })

  it('every endpoint of the pool down: refused at once, up again when they are', async () => {
    await Promise.all([a.kill(), b.kill()])
    const counts = await wave(gw.url, WAVE)
    clean(counts)
    expect(counts.complete ?? 0).toBe(0)
    await healthy()
    await recovered()
  })
})
