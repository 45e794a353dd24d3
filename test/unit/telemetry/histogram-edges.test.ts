import { describe, expect, it } from 'vitest'
import { latencyEdges } from '../../../src/telemetry/histogram-edges.js'
import { METRICS } from '../../../src/telemetry/index.js'
import { verdictOf } from '../../../src/telemetry/verdict.js'
import { samples, setup, testConfig, ticket } from './fixtures.js'

// Odd thresholds on purpose: none is a default edge.
const classes = {
  interactive: { slo: { ttft_ms: 333, tpot_ms: 37 } },
  batch: { slo: { e2e_ms: 12_345 } },
  gold: {
    priority: 0,
    slo: { ttft_ms: 2_000, tpot_ms: 21, e2e_ms: 7_777 },
    max_kv_usage: 0.9,
    reject_on_ttft: true,
  },
}

async function edgesOf(registry: Parameters<typeof samples>[0], name: string): Promise<number[]> {
  const les = new Set<number>()
  for (const s of await samples(registry, `${name}_bucket`))
    if (s.labels.le !== '+Inf') les.add(Number(s.labels.le))
  return [...les].sort((a, b) => a - b)
}

describe('histogram edges include every configured SLO threshold', () => {
  const config = testConfig({ classes, telemetry: { summary_interval_ms: 0, ttft_buckets_s: [0.123] } })

  it('in the computed edges', () => {
    const e = latencyEdges(config)
    for (const cls of Object.values(config.classes)) {
      if (cls.slo.ttft_ms !== undefined) expect(e.ttft).toContain(cls.slo.ttft_ms / 1000)
      if (cls.slo.tpot_ms !== undefined) expect(e.tpot).toContain(cls.slo.tpot_ms / 1000)
      if (cls.slo.tpot_ms !== undefined) expect(e.itl).toContain(cls.slo.tpot_ms / 1000)
      if (cls.slo.e2e_ms !== undefined) expect(e.e2e).toContain(cls.slo.e2e_ms / 1000)
      expect(e.queueWait).toContain(cls.max_queue_wait_ms / 1000)
    }
    expect(e.ttft).toContain(0.123) // configured extra edge
    expect(e.ttft).toContain(2) // the edge vLLM's buckets lack
    for (const list of Object.values(e)) expect([...list].sort((a, b) => a - b)).toEqual(list)
  })

  it('in the exported histograms, so attainment read from `le` is exact', async () => {
    const { registry, telemetry } = setup(config)
    // Each class: a request exactly at each threshold (met) and one a hair above (missed).
    const tickets = [
      ticket(0, { class: 'interactive', ttft: 333, e2e: 333 + 37 * 10, chunks: 11 }),
      ticket(0, { class: 'interactive', ttft: 333.001, e2e: 333.001 + 37.001 * 10, chunks: 11 }),
      ticket(0, { class: 'gold', ttft: 2_000, e2e: 2_000 + 21 * 20, chunks: 21 }),
      ticket(0, { class: 'gold', ttft: 2_000.5, e2e: 7_777.5, chunks: 2 }),
      ticket(0, {
        class: 'batch',
        stream: false,
        e2e: 12_345,
        usage: { promptTokens: 1, completionTokens: 9 },
      }),
      ticket(0, {
        class: 'batch',
        stream: false,
        e2e: 12_346,
        usage: { promptTokens: 1, completionTokens: 9 },
      }),
    ]
    for (const t of tickets) telemetry.record(t)

    const ttftEdges = await edgesOf(registry, METRICS.ttft)
    const tpotEdges = await edgesOf(registry, METRICS.tpot)
    const e2eEdges = await edgesOf(registry, METRICS.e2e)
    expect(ttftEdges).toEqual(expect.arrayContaining([0.333, 2]))
    expect(tpotEdges).toEqual(expect.arrayContaining([0.037, 0.021]))
    expect(e2eEdges).toEqual(expect.arrayContaining([12.345, 7.777]))

    // Fraction within SLO from the histogram equals the verdicts' fraction, per class and SLO.
    const within = async (name: string, cls: string, le: number) => {
      const b = await samples(registry, `${name}_bucket`)
      return b
        .filter((s) => s.labels.class === cls && Number(s.labels.le) === le)
        .reduce((a, s) => a + s.value, 0)
    }
    const missedBy = (cls: string, slo: 'ttft' | 'tpot' | 'e2e') =>
      tickets.filter((t) => {
        if (t.class !== cls) return false
        const v = verdictOf(t, config.classes[cls]?.slo)
        return v.kind === 'missed' && v.missed.includes(slo)
      }).length
    expect(await within(METRICS.ttft, 'interactive', 0.333)).toBe(2 - missedBy('interactive', 'ttft'))
    expect(await within(METRICS.tpot, 'interactive', 0.037)).toBe(2 - missedBy('interactive', 'tpot'))
    expect(await within(METRICS.ttft, 'gold', 2)).toBe(2 - missedBy('gold', 'ttft'))
    expect(await within(METRICS.tpot, 'gold', 0.021)).toBe(1) // the second gold request has no TPOT
    expect(await within(METRICS.e2e, 'gold', 7.777)).toBe(2 - missedBy('gold', 'e2e'))
    expect(await within(METRICS.e2e, 'batch', 12.345)).toBe(2 - missedBy('batch', 'e2e'))
    expect(missedBy('interactive', 'ttft')).toBe(1)
    expect(missedBy('interactive', 'tpot')).toBe(1)
    expect(missedBy('gold', 'e2e')).toBe(1)
    expect(missedBy('batch', 'e2e')).toBe(1)
    telemetry.close()
  })
})
