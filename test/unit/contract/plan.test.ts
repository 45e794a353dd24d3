/**
 * The plan's virtual-time runs: the real admission in front of the simulator's engine, on a
 * virtual clock. Deterministic, light at low load, and at overload the gateway's admission
 * keeps goodput where the plain proxy's collapses (the point of the gateway).
 */
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { configSchema, poolSchema } from '../../../src/config/schema.js'
import { runPlan } from '../../../src/contract/plan/plan.js'
import { planSvg } from '../../../src/contract/plan/plan-svg.js'
import { runVirtual } from '../../../src/contract/plan/virtual-run.js'
import { loadWorkload } from '../../../src/loadgen/workload-load.js'
import { loadProfile } from '../../../src/sim/profile-loader.js'

const workload = loadWorkload(join(import.meta.dirname, '..', '..', 'fixtures', 'plan', 'tiny-chat.yaml'))
const profile = loadProfile('tiny')
const config = configSchema.parse({ tenants: [], admission: { max_prefill_tokens_per_endpoint: 512 } })
const pool = poolSchema.parse({ name: 'sim', models: ['*'] })
const spec = (ratePerS: number, admission: boolean, durationMs = 30_000) => ({
  profile,
  config,
  pool,
  workload,
  ratePerS,
  replicas: 1,
  durationMs,
  drainMs: 30_000,
  admission,
})

describe('plan: virtual-time runs', () => {
  it('serves a light load in full, with and without admission, and the same spec gives the same figures', () => {
    const a = runVirtual(spec(2, true))
    const b = runVirtual(spec(2, false))
    expect(a.offered).toBeGreaterThan(40)
    expect(a.offered).toBe(b.offered)
    expect(a.attainment).toBe(1)
    expect(b.attainment).toBe(1)
    expect(a.refused).toBe(0)
    const again = runVirtual(spec(2, true))
    expect({ ...again, cpuMs: 0 }).toEqual({ ...a, cpuMs: 0 })
  })

  it("learns each replica's engine facts from the run, as a real endpoint does (not the estimator's priors)", () => {
    const r = runVirtual(spec(20, true, 20_000))
    const facts = r.engineFacts?.[0] as
      | { prefillTokensPerS: { value: number; source: string }; stepMs: { value: number; source: string } }
      | undefined
    // the tiny profile: 10 us per prompt token (100k tokens/s), a 2 ms step at a small batch;
    // the priors are 20k tokens/s and 15 ms
    expect(facts?.prefillTokensPerS.source).toBe('measured')
    expect(facts?.prefillTokensPerS.value).toBeGreaterThan(50_000)
    expect(facts?.prefillTokensPerS.value).toBeLessThan(200_000)
    expect(facts?.stepMs.source).toBe('measured')
    expect(facts?.stepMs.value).toBeGreaterThan(1.5)
    expect(facts?.stepMs.value).toBeLessThan(5)
    expect(runVirtual(spec(20, false, 5_000)).engineFacts).toBeUndefined()
  })

  it('at 2x overload admission refuses (its own reasons) and keeps goodput the plain proxy loses', () => {
    const raw = runVirtual(spec(300, false, 10_000))
    const gw = runVirtual(spec(300, true, 10_000))
    expect(raw.refused).toBe(0)
    expect(gw.refused).toBeGreaterThan(0)
    for (const reason of Object.keys(gw.refusedBy))
      expect(['ttft_slo', 'queue_timeout', 'queue_full', 'kv_exhausted']).toContain(reason)
    expect(gw.goodput).toBeGreaterThan(2 * raw.goodput)
    expect(gw.ttftP99Ms).toBeLessThan(raw.ttftP99Ms)
  })

  it('finds the max goodput between a passing and a failing rate, sizes replicas and prices them', () => {
    const p = runPlan({
      profile,
      config,
      pool,
      workload,
      typical: { promptTokens: 96, outputTokens: 24 },
      durationMs: 8_000,
      drainMs: 10_000,
      attainment: 0.9,
      headroom: 0.25,
      tolerance: 0.05,
      maxSearchRuns: 6,
      targetRate: 1000,
      gpuCostPerHour: 2,
    })
    expect(p.sweep).toHaveLength(8)
    const m = p.withAdmission
    expect(m.rate).toBeGreaterThan(0)
    expect(m.run?.attainment).toBeGreaterThanOrEqual(0.9)
    expect(m.failRate).toBeGreaterThan(m.rate)
    expect((m.failRate! - m.rate) / m.failRate!).toBeLessThanOrEqual(0.2)
    expect(p.sizing?.replicas).toBe(Math.ceil(1000 / (m.rate * 0.75)))
    expect(p.cost?.atMax?.perRequest).toBeCloseTo(2 / 3600 / m.run!.goodput, 9)
    expect(planSvg(p)).toContain('<polyline')
  })
})
