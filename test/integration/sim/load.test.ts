import { afterEach, describe, expect, it } from 'vitest'
import { type SimHandle, startSim } from '../../../src/sim/index.js'
import { Rng } from '../../../src/sim/rng.js'
import { metricValue, postStream, sleep, waitFor } from './helpers.js'

let sim: SimHandle | undefined
afterEach(async () => {
  await sim?.close()
  sim = undefined
})

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

describe('simulator under load', () => {
  it('open-loop Poisson load above capacity: the waiting queue and TTFT grow, then drain', async () => {
    // tiny at time scale 10: ~16 running x 16 tokens per ~37 ms step -> ~27 req/s of capacity.
    sim = await startSim({ profile: 'tiny', port: 0, timeScale: 10 })
    const url = sim.replicas[0]?.url ?? ''
    const engine = sim.replicas[0]?.engine
    const rate = 60 // requests per second offered
    const loadMs = 2500
    const rng = new Rng(5)
    const results: Promise<{ sentAt: number; ttft: number; tokens: number }>[] = []
    const waiting: { t: number; w: number }[] = []
    const t0 = performance.now()
    const sampler = setInterval(() => {
      void fetch(`${url}/metrics`)
        .then((r) => r.text())
        .then((text) =>
          waiting.push({ t: performance.now() - t0, w: metricValue(text, 'vllm:num_requests_waiting') }),
        )
    }, 250)
    let next = 0
    while (next < loadMs) {
      const at = next
      await sleep(Math.max(0, at - (performance.now() - t0)))
      results.push(
        postStream(`${url}/v1/completions`, {
          prompt: 'p'.repeat(400),
          max_tokens: 16,
          ignore_eos: true,
          stream: true,
        }).then((r) => ({ sentAt: at, ttft: (r.events[0]?.t ?? 0) - r.start, tokens: r.chunks.length })),
      )
      next += rng.exponential(1000 / rate)
    }
    const done = await Promise.all(results)
    clearInterval(sampler)
    expect(done.every((d) => d.tokens === 16)).toBe(true)

    const during = waiting.filter((s) => s.t <= loadMs)
    const early = during.filter((s) => s.t < 800)
    const late = during.filter((s) => s.t > loadMs - 700)
    expect(Math.max(...late.map((s) => s.w))).toBeGreaterThan(Math.max(...early.map((s) => s.w)) + 10)
    expect(Math.max(...waiting.map((s) => s.w))).toBeGreaterThanOrEqual(20)

    const first = done.filter((d) => d.sentAt < 500).map((d) => d.ttft)
    const last = done.filter((d) => d.sentAt > loadMs - 500).map((d) => d.ttft)
    expect(median(last)).toBeGreaterThan(3 * median(first))

    // the load stopped: everything drained
    expect(engine?.numWaiting).toBe(0)
    expect(engine?.numRunning).toBe(0)
    const after = await (await fetch(`${url}/metrics`)).text()
    expect(metricValue(after, 'vllm:num_requests_waiting')).toBe(0)
  }, 30_000)

  it('a client that disconnects ends its sequence and frees its blocks', async () => {
    sim = await startSim({ profile: 'tiny', port: 0 })
    const url = sim.replicas[0]?.url ?? ''
    const engine = sim.replicas[0]?.engine
    const ac = new AbortController()
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({ prompt: 'd'.repeat(800), max_tokens: 1500, ignore_eos: true, stream: true }),
      signal: ac.signal,
    })
    const reader = res.body?.getReader()
    await reader?.read()
    expect(engine?.numRunning).toBe(1)
    expect(engine?.kv.usedBlocks).toBeGreaterThan(0)
    ac.abort()
    expect(await waitFor(() => engine?.kv.usedBlocks === 0 && engine.numRunning === 0, 3000)).toBe(true)
    expect(engine?.stats.finished.abort).toBe(1)
  })

  it('kv_cache_usage_perc at every scrape equals used / total blocks of that instant', async () => {
    sim = await startSim({ profile: 'tiny', port: 0 })
    const url = sim.replicas[0]?.url ?? ''
    const streams = Array.from({ length: 6 }, (_, i) =>
      postStream(`${url}/v1/completions`, {
        prompt: 'k'.repeat(4000 + 160 * i),
        max_tokens: 200,
        ignore_eos: true,
        stream: true,
      }),
    )
    const seen: number[] = []
    for (let i = 0; i < 25; i++) {
      const text = await (await fetch(`${url}/metrics`)).text()
      const usage = metricValue(text, 'vllm:kv_cache_usage_perc')
      expect(usage).toBeCloseTo(
        metricValue(text, 'sim_kv_blocks_used') / metricValue(text, 'sim_kv_blocks_total'),
        12,
      )
      seen.push(usage)
      await sleep(15)
    }
    await Promise.all(streams)
    expect(Math.max(...seen)).toBeGreaterThan(0.5)
    expect(sim.replicas[0]?.engine.stats.preemptions).toBeGreaterThan(0)
  })
})
