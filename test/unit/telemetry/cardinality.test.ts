import { describe, expect, it } from 'vitest'
import { METRICS } from '../../../src/telemetry/index.js'
import { TenantLabels } from '../../../src/telemetry/tenant-labels.js'
import { samples, setup, testConfig, ticket, value } from './fixtures.js'

const TENANT_METRICS = [
  METRICS.requests,
  METRICS.goodRequests,
  METRICS.goodTokens,
  METRICS.tokens,
  METRICS.rejected,
  METRICS.cost,
]

async function tenantValues(registry: Parameters<typeof samples>[0]): Promise<Set<string>> {
  const out = new Set<string>()
  for (const name of TENANT_METRICS)
    for (const s of await samples(registry, name)) if (s.labels.tenant) out.add(s.labels.tenant)
  return out
}

describe('tenant label cardinality cap', () => {
  it('holds with 1,000 distinct tenants, keeps totals exact, and labels the top N by traffic', async () => {
    const limit = 20
    const config = testConfig({
      telemetry: { summary_interval_ms: 0, tenant_label_limit: limit, tenant_label_rebalance_ms: 60_000 },
    })
    const { registry, telemetry, clock } = setup(config)
    // 1,000 tenants; tenants heavy-0..heavy-9 send 20 requests each, the rest one each,
    // interleaved so the heavy ones are not among the first to arrive.
    let n = 0
    const send = (tenant: string, reject = false) => {
      const t = ticket(clock.now(), {
        tenant,
        ttft: 100,
        e2e: 300,
        chunks: 5,
        ...(reject ? { outcome: 'rejected', errorCode: 'queue_full' } : {}),
      })
      clock.advance(10)
      telemetry.record(t)
      n++
    }
    for (let i = 0; i < 990; i++) send(`light-${i}`, i % 7 === 0)
    for (let r = 0; r < 20; r++) for (let h = 0; h < 10; h++) send(`heavy-${h}`)
    expect(n).toBe(1_190)

    const before = await tenantValues(registry)
    expect(before.size).toBeLessThanOrEqual(limit + 1)
    expect(before.has('other')).toBe(true)
    // The first `limit` tenants got labels at once (warm-up); heavy ones came later.
    expect(before.has('heavy-0')).toBe(false)
    const total = (await samples(registry, METRICS.requests)).reduce((a, s) => a + s.value, 0)
    expect(total).toBe(1_190)

    // After the rebalance period the labelled set is the top N by traffic.
    clock.advance(60_000)
    for (let h = 0; h < 10; h++) send(`heavy-${h}`)
    const after = await tenantValues(registry)
    expect(after.size).toBeLessThanOrEqual(limit + 1)
    for (let h = 0; h < 10; h++) expect(after.has(`heavy-${h}`)).toBe(true)
    const state = telemetry.state() as { tenants: { labelled: string[] } }
    expect(state.tenants.labelled.length).toBeLessThanOrEqual(limit)
    for (let h = 0; h < 10; h++) expect(state.tenants.labelled).toContain(`heavy-${h}`)
    telemetry.close()
  })
})

describe('TenantLabels', () => {
  it('evicts the series of tenants that lose their slot and never exceeds the limit', () => {
    const evicted: string[] = []
    const labels = new TenantLabels({
      limit: 2,
      rebalanceMs: 1_000,
      now: 0,
      onEvict: (t) => evicted.push(...t),
    })
    expect(labels.observe('a', 0)).toBe('a')
    expect(labels.observe('b', 0)).toBe('b')
    expect(labels.observe('c', 0)).toBe('other')
    for (let i = 0; i < 10; i++) labels.observe('c', 1)
    labels.observe('b', 1)
    // Rebalance at t=1000: c (11) and b (2) beat a (1).
    expect(labels.observe('c', 1_000)).toBe('c')
    expect(evicted).toEqual(['a'])
    expect(labels.current('a')).toBe('other')
    expect(labels.labelledTenants().sort()).toEqual(['b', 'c'])
  })

  it('keeps memory bounded under 100,000 one-off tenants', () => {
    const labels = new TenantLabels({ limit: 10, rebalanceMs: 1_000, now: 0 })
    for (let i = 0; i < 100_000; i++) labels.observe(`t${i}`, i)
    const internal = labels as unknown as { counts: Map<string, unknown> }
    expect(internal.counts.size).toBeLessThanOrEqual(64)
    expect(labels.labelledTenants().length).toBeLessThanOrEqual(10)
  })
})

describe('tenant series after eviction', () => {
  it('a tenant that loses its label and regains it restarts its series from zero', async () => {
    const config = testConfig({
      telemetry: { summary_interval_ms: 0, tenant_label_limit: 1, tenant_label_rebalance_ms: 1_000 },
    })
    const { registry, telemetry, clock } = setup(config)
    const send = (tenant: string, times: number) => {
      for (let i = 0; i < times; i++) {
        telemetry.record(ticket(clock.now(), { tenant, ttft: 100, e2e: 300, chunks: 5 }))
        clock.advance(1)
      }
    }
    send('a', 1) // a takes the only label
    send('b', 10) // b is `other`
    clock.advance(1_000)
    send('b', 1) // rebalance: b labelled, a evicted
    expect(await value(registry, METRICS.requests, { tenant: 'a' })).toBe(0)
    expect(await value(registry, METRICS.requests, { tenant: 'b' })).toBe(1)
    send('a', 100)
    clock.advance(1_000)
    send('a', 2) // rebalance: a labelled again, b evicted
    expect(await value(registry, METRICS.requests, { tenant: 'a' })).toBe(2)
    expect(await value(registry, METRICS.goodRequests, { tenant: 'a' })).toBe(2)
    expect(await value(registry, METRICS.tokens, { tenant: 'a', kind: 'completion' })).toBe(10)
    expect(await value(registry, METRICS.requests, { tenant: 'b' })).toBe(0)
    telemetry.close()
  })
})
