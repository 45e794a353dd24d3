import { describe, expect, it } from 'vitest'
import { METRICS } from '../../../src/telemetry/index.js'
import { FakeBackends, samples, setup, testConfig, value } from './fixtures.js'

describe('backend-derived metrics', () => {
  const config = testConfig({ telemetry: { summary_interval_ms: 0, backend_sample_interval_ms: 1_000 } })
  const make = () => {
    let fake: FakeBackends | undefined
    const s = setup(config, (clock) => {
      fake = new FakeBackends(config, { main: ['main-0', 'main-1'] }, clock)
      return fake
    })
    return { ...s, fake: fake! }
  }

  it("re-exports the engines' counters and survives an engine restart", async () => {
    const { registry, telemetry, fake } = make()
    fake.setLoad('main-0', { preemptionsTotal: 5, prefixCacheQueriesTotal: 1_000, prefixCacheHitsTotal: 250 })
    expect(await value(registry, METRICS.backendPreemptions, { backend: 'main-0' })).toBe(5)
    fake.setLoad('main-0', { preemptionsTotal: 7, prefixCacheQueriesTotal: 1_500, prefixCacheHitsTotal: 500 })
    expect(await value(registry, METRICS.backendPreemptions, { backend: 'main-0' })).toBe(7)
    expect(await value(registry, METRICS.backendPrefixHits, { pool: 'main' })).toBe(500)
    // Restart: the engine's counter drops to 2; ours adds 2 and never goes down.
    fake.setLoad('main-0', { preemptionsTotal: 2, prefixCacheQueriesTotal: 100, prefixCacheHitsTotal: 10 })
    expect(await value(registry, METRICS.backendPreemptions, { backend: 'main-0' })).toBe(9)
    expect(await value(registry, METRICS.backendPrefixQueries, { backend: 'main-0' })).toBe(1_600)
    // An engine that does not report a counter gets no series for it.
    expect(await samples(registry, METRICS.backendPreemptions)).toHaveLength(1)
    telemetry.close()
  })

  it('samples the running batch: size distribution and busy time (busy fraction)', async () => {
    const { registry, telemetry, fake, clock } = make()
    fake.setLoad('main-0', { running: 3 })
    fake.setLoad('main-1', { running: 0 })
    await registry.metrics() // first sample: observes, no elapsed time yet
    for (let i = 0; i < 4; i++) {
      clock.advance(1_000)
      fake.setLoad('main-0', { running: 3 })
      fake.setLoad('main-1', { running: i < 2 ? 0 : 8 })
      await registry.metrics()
    }
    expect(await value(registry, `${METRICS.backendBusy}`, { backend: 'main-0' })).toBeCloseTo(4, 9)
    expect(await value(registry, `${METRICS.backendBusy}`, { backend: 'main-1' })).toBeCloseTo(2, 9)
    expect(await value(registry, `${METRICS.backendBatchSize}_count`, { pool: 'main' })).toBe(10)
    const le4 = await value(registry, `${METRICS.backendBatchSize}_bucket`, { pool: 'main', le: '4' })
    expect(le4).toBe(8) // five 3s and three 0s; two 8s above

    // Stale loads are not sampled.
    clock.advance(5_000)
    await registry.metrics()
    expect(await value(registry, `${METRICS.backendBatchSize}_count`, { pool: 'main' })).toBe(10)
    telemetry.close()
  })

  it('drops the series of endpoints that disappear', async () => {
    const { registry, telemetry, fake } = make()
    fake.setLoad('main-1', { preemptionsTotal: 1 })
    expect(await value(registry, METRICS.backendPreemptions, { backend: 'main-1' })).toBe(1)
    const pool = fake.poolList[0]!
    const before = pool.endpoints
    ;(pool as { endpoints: typeof before }).endpoints = () => before().filter((e) => e.name !== 'main-1')
    expect(await samples(registry, METRICS.backendPreemptions)).toHaveLength(0)
    telemetry.close()
  })
})
