import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src/clock.js'
import { CostAttributor, type CostShare, type PoolCost } from '../../../src/telemetry/cost.js'
import { IDLE, METRICS } from '../../../src/telemetry/index.js'
import { FakeBackends, setup, testConfig, ticket, value } from './fixtures.js'

function attributor(pools: PoolCost[], intervalMs = 10_000) {
  const shares: CostShare[] = []
  const clock = new ManualClock(0)
  const cost = new CostAttributor({ intervalMs, now: 0, pools: () => pools, onShare: (s) => shares.push(s) })
  const sum = (f: (s: CostShare) => boolean = () => true) =>
    shares.filter(f).reduce((a, s) => a + s.amount, 0)
  return { shares, clock, cost, sum }
}

describe('CostAttributor (fake time)', () => {
  it('splits each interval by tokens: cost_per_hour x endpoints x elapsed', () => {
    // 36/h x 2 endpoints = 0.02 per second -> 0.2 per 10 s interval.
    const { cost, sum } = attributor([{ name: 'p', costPerHour: 36, endpoints: 2, busy: false }])
    cost.addTokens(1_000, 'p', 'interactive', 'a', 100)
    cost.addTokens(5_000, 'p', 'interactive', 'b', 300)
    cost.addTokens(9_999, 'p', 'batch', 'a', 600)
    cost.tick(9_999)
    expect(sum()).toBe(0) // the interval is still open
    cost.tick(10_000)
    expect(sum()).toBeCloseTo(0.2, 12)
    expect(sum((s) => s.tenant === 'a' && s.class === 'interactive')).toBeCloseTo(0.02, 12)
    expect(sum((s) => s.tenant === 'b')).toBeCloseTo(0.06, 12)
    expect(sum((s) => s.class === 'batch')).toBeCloseTo(0.12, 12)
  })

  it('books an idle interval to _idle, and carries a busy one to the next tokens', () => {
    const pool = { name: 'p', costPerHour: 3.6, endpoints: 1, busy: false } // 0.001 per second
    const { cost, sum } = attributor([pool])
    cost.tick(10_000) // idle
    expect(sum((s) => s.tenant === IDLE && s.class === IDLE)).toBeCloseTo(0.01, 12)
    pool.busy = true
    cost.tick(20_000) // busy, no tokens finished: carried
    expect(sum()).toBeCloseTo(0.01, 12)
    cost.addTokens(25_000, 'p', 'batch', 'long', 1_000)
    cost.tick(30_000)
    expect(sum((s) => s.tenant === 'long')).toBeCloseTo(0.02, 12)
    expect(sum()).toBeCloseTo(0.03, 12) // the whole bill, nothing lost
  })

  it('closes several elapsed intervals as one span', () => {
    const { cost, sum } = attributor([{ name: 'p', costPerHour: 3.6, endpoints: 1, busy: false }])
    cost.addTokens(1, 'p', 'c', 't', 10)
    cost.tick(35_000)
    expect(sum((s) => s.tenant === 't')).toBeCloseTo(0.03, 12)
  })
})

describe('cost_total through telemetry', () => {
  it('attributes the pool cost to tenants by their tokens, on a manual clock', async () => {
    const config = testConfig({ telemetry: { summary_interval_ms: 0, cost_interval_ms: 10_000 } })
    const { registry, telemetry, clock } = setup(config)
    // Pool 'main': 3.6/h x 2 endpoints = 0.002 per second = 0.02 per interval.
    const t0 = clock.now()
    telemetry.record(ticket(t0 - 500, { tenant: 'a', ttft: 100, e2e: 500, chunks: 10, promptTokens: 90 })) // 100 tokens
    clock.advance(2_000)
    telemetry.record(
      ticket(clock.now() - 500, { tenant: 'b', ttft: 100, e2e: 500, chunks: 100, promptTokens: 200 }),
    ) // 300
    clock.advance(8_000) // interval [t0, t0+10s) ends
    expect(await value(registry, METRICS.cost, { tenant: 'a' })).toBeCloseTo(0.005, 12)
    expect(await value(registry, METRICS.cost, { tenant: 'b' })).toBeCloseTo(0.015, 12)
    clock.advance(10_000) // idle interval
    expect(await value(registry, METRICS.cost, { tenant: IDLE })).toBeCloseTo(0.02, 12)
    expect(await value(registry, METRICS.cost)).toBeCloseTo(0.04, 12)
    // Cost per 1K tokens in the rolling window (class interactive): 0.02 / 0.4.
    const state = telemetry.state() as {
      windows: Record<string, Record<string, { costPer1kTokens: number }>>
    }
    expect(state.windows.interactive?.['1m']?.costPer1kTokens).toBeCloseTo(0.05, 12)
    telemetry.close()
  })

  it('counts endpoints from the backends when given', async () => {
    const config = testConfig({ telemetry: { summary_interval_ms: 0, cost_interval_ms: 1_000 } })
    const { registry, telemetry, clock } = setup(
      config,
      (c) => new FakeBackends(config, { main: ['e1', 'e2', 'e3'] }, c),
    )
    clock.advance(1_000)
    // 3.6/h x 3 endpoints x 1 s, idle.
    expect(await value(registry, METRICS.cost)).toBeCloseTo(0.003, 12)
    telemetry.close()
  })
})
