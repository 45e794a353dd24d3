import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { createBackends } from '../../../src/backends/index.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'

function make(pools: Record<string, unknown>[]) {
  const config = configSchema.parse({ backends: { pools } })
  const registry = new Registry()
  const backends = createBackends(config, { clock: new ManualClock(1000), registry })
  return { backends, registry }
}

describe('createBackends', () => {
  it('routes, lists models and exports the backend series with pool and backend labels', async () => {
    const { backends, registry } = make([
      {
        name: 'llama',
        models: ['llama-8b'],
        aliases: ['fast'],
        endpoints: ['http://127.0.0.1:1', 'http://127.0.0.1:2'],
      },
      { name: 'rest', models: ['*'], endpoints: ['http://127.0.0.1:3'], fail_open: true },
    ])
    expect(backends.route('fast')?.name).toBe('llama')
    expect(backends.route('other')?.name).toBe('rest')
    expect(backends.modelIds()).toEqual(['llama-8b', 'fast'])
    const text = await registry.metrics()
    expect(text).toContain('slo_gateway_backend_up{pool="llama",backend="llama-0"} 0')
    expect(text).toContain('slo_gateway_backend_scrape_age_seconds{pool="llama",backend="llama-1"} +Inf')
    expect(text).toContain('slo_gateway_backend_ejected{pool="rest",backend="rest-0"} 0')
    expect(text).not.toContain('127.0.0.1')
    expect(text).not.toMatch(/slo_gateway_backend_waiting\{/) // never scraped: no value, no series
    await backends.close()
  })

  it('fails closed: never-scraped endpoints take no request; a fail-open pool does', async () => {
    const { backends } = make([
      { name: 'closed', models: ['a'], endpoints: ['http://127.0.0.1:1'] },
      { name: 'open', models: ['b'], endpoints: ['http://127.0.0.1:2'], fail_open: true },
    ])
    const closed = backends.route('a')
    expect(closed?.acquire(10)).toBeUndefined()
    expect(closed?.retryAfterMs()).toBeGreaterThanOrEqual(100)
    const lease = backends.route('b')?.acquire(10)
    expect(lease?.endpoint.name).toBe('open-0')
    lease?.release('ok')
    expect(backends.ready()).toBe(true) // the fail-open pool has an endpoint
    await backends.close()
  })

  it('is not ready with only stale endpoints in fail-closed pools', async () => {
    const { backends } = make([{ name: 'closed', models: ['a'], endpoints: ['http://127.0.0.1:1'] }])
    expect(backends.ready()).toBe(false)
    await backends.close()
  })

  it('takes a scorer for every pool', async () => {
    const { backends } = make([
      { name: 'p', models: ['a'], endpoints: ['http://127.0.0.1:1', 'http://127.0.0.1:2'], fail_open: true },
    ])
    backends.setScorer({ name: 'second', score: (v) => (v.name === 'p-1' ? 0 : 1) })
    for (let i = 0; i < 3; i++) expect(backends.route('a')?.acquire(1)?.endpoint.name).toBe('p-1')
    const state = backends.state() as {
      pools: { scorer: string; endpoints: { ledger: { requests: number } }[] }[]
    }
    expect(state.pools[0]?.scorer).toBe('second')
    expect(state.pools[0]?.endpoints.map((e) => e.ledger.requests)).toEqual([0, 3])
    await backends.close()
  })

  it('state shows load, effective load, freshness, breaker and ledger per endpoint', async () => {
    const { backends } = make([{ name: 'p', models: ['a'], endpoints: ['http://127.0.0.1:1'] }])
    const state = backends.state() as { pools: Record<string, unknown>[] }
    expect(state.pools[0]).toMatchObject({
      name: 'p',
      engine: 'vllm',
      discovery: { type: 'static' },
      usable: 0,
      endpoints: [
        {
          name: 'p-0',
          origin: 'http://127.0.0.1:1',
          status: 'stale',
          usable: false,
          load: null,
          effectiveLoad: { waiting: 0, running: 0, fresh: false },
          freshness: { fresh: false, ageMs: null, staleAfterMs: 1000 },
          breaker: { state: 'closed', consecutiveFailures: 0 },
          ledger: { requests: 0, tokens: 0 },
          draining: false,
        },
      ],
    })
    await backends.close()
  })

  it('tells listeners when endpoints come and go', async () => {
    const config = configSchema.parse({
      backends: { pools: [{ name: 'p', models: ['a'], discovery: { type: 'dns', name: 'svc', port: 1 } }] },
    })
    let answer = ['127.0.0.1']
    const backends = createBackends(config, {
      clock: new ManualClock(),
      registry: new Registry(),
      resolver: async () => answer,
    })
    let calls = 0
    backends.onChange(() => calls++)
    backends.onChange(() => {
      throw new Error('a bad listener')
    })
    backends.start()
    await new Promise((r) => setImmediate(r))
    expect(calls).toBeGreaterThanOrEqual(1)
    expect(backends.pools()[0]?.endpoints()).toHaveLength(1)
    answer = []
    const before = calls
    backends.pools()[0]?.setTargets([])
    expect(calls).toBe(before + 1)
    await backends.close()
  })
})
