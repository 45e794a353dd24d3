import { describe, expect, it } from 'vitest'
import { vllmAdapter } from '../../../src/backends/adapters/vllm.js'
import { DnsDiscovery, endpointUrl, type Resolver } from '../../../src/backends/discovery.js'
import { Picker } from '../../../src/backends/picker.js'
import { EndpointPool } from '../../../src/backends/pool.js'
import { leastWaitScorer } from '../../../src/backends/scorer.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema, type PoolConfig } from '../../../src/config/schema.js'

function poolConfig(extra: Record<string, unknown>): {
  pool: PoolConfig
  upstream: ReturnType<typeof configSchema.parse>['upstream']
} {
  const cfg = configSchema.parse({
    backends: { pools: [{ name: 'p', models: ['m'], fail_open: true, ...extra }] },
  })
  return { pool: cfg.backends.pools[0]!, upstream: cfg.upstream }
}

function makePool(extra: Record<string, unknown>, resolver: Resolver = async () => []) {
  const { pool, upstream } = poolConfig(extra)
  return new EndpointPool(pool, {
    clock: new ManualClock(),
    adapter: vllmAdapter,
    upstream,
    picker: new Picker(leastWaitScorer),
    resolver,
  })
}

const tick = () => new Promise((r) => setImmediate(r))

describe('endpointUrl', () => {
  it('brackets IPv6 addresses', () => {
    expect(endpointUrl('10.1.2.3', 8000, 'http')).toBe('http://10.1.2.3:8000')
    expect(endpointUrl('fd00::1', 8000, 'https')).toBe('https://[fd00::1]:8000')
  })
})

describe('DnsDiscovery', () => {
  it('hands over every address (deduplicated, sorted); a failed lookup keeps the endpoints', async () => {
    let answer: string[] | Error = ['10.0.0.2', '10.0.0.1', '10.0.0.2']
    const seen: string[][] = []
    const warnings: object[] = []
    const d = new DnsDiscovery(
      { type: 'dns', name: 'vllm.ns.svc', port: 8000, scheme: 'http', interval_ms: 1000 },
      async (name) => {
        expect(name).toBe('vllm.ns.svc')
        if (answer instanceof Error) throw answer
        return answer
      },
      (urls) => seen.push(urls),
      { warn: (o) => warnings.push(o), info: () => {} },
    )
    await d.refresh()
    expect(seen).toEqual([['http://10.0.0.1:8000', 'http://10.0.0.2:8000']])
    answer = Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' })
    await d.refresh()
    expect(seen).toHaveLength(1)
    expect(warnings).toMatchObject([{ detail: 'ENOTFOUND' }])
    answer = []
    await d.refresh()
    expect(seen[1]).toEqual([])
  })
})

describe('EndpointPool', () => {
  it('names static endpoints <pool>-<index> and never by address', async () => {
    const p = makePool({ endpoints: ['http://user:secret@10.0.0.1:8000/v1', 'http://10.0.0.2:8000'] })
    expect(p.endpoints().map((e) => [e.name, e.origin])).toEqual([
      ['p-0', 'http://10.0.0.1:8000'],
      ['p-1', 'http://10.0.0.2:8000'],
    ])
    expect(JSON.stringify(p.state())).not.toContain('secret')
    await p.close()
  })

  it('adds discovered endpoints and drains removed ones only after their leases end', async () => {
    let addresses = ['127.0.0.1', '127.0.0.2']
    const p = makePool(
      { discovery: { type: 'dns', name: 'svc', port: 1, interval_ms: 60_000 } },
      async () => addresses,
    )
    p.start()
    await tick()
    expect(p.endpoints().map((e) => e.name)).toEqual(['p-0', 'p-1'])
    const leases = Array.from({ length: 4 }, () => p.acquire(10))
    const onLeaving = leases.filter((l) => l?.endpoint.origin === 'http://127.0.0.2:1')
    expect(onLeaving.length).toBeGreaterThan(0) // the picker spread them

    addresses = ['127.0.0.1', '127.0.0.3']
    p.setTargets(addresses.map((a) => endpointUrl(a, 1, 'http')))
    expect(p.endpoints().map((e) => [e.name, e.origin])).toEqual([
      ['p-0', 'http://127.0.0.1:1'],
      ['p-2', 'http://127.0.0.3:1'], // p-1 is still draining: its name is not reused yet
    ])
    expect(p.drainingEndpoints().map((e) => e.name)).toEqual(['p-1'])
    for (let i = 0; i < 20; i++) expect(p.acquire(1)?.endpoint.name).not.toBe('p-1') // no new requests there
    for (const l of onLeaving) l?.release('ok')
    await tick()
    await tick()
    expect(p.drainingEndpoints()).toEqual([])
    p.setTargets(['http://127.0.0.1:1', 'http://127.0.0.3:1', 'http://127.0.0.4:1'])
    expect(p.endpoints().map((e) => e.name)).toEqual(['p-0', 'p-2', 'p-1']) // the freed slot
    for (const l of leases) l?.release('ok')
    await p.close()
  })

  it('answers at once with no endpoint, and says when to retry', async () => {
    const p = makePool({ discovery: { type: 'dns', name: 'svc', port: 1, interval_ms: 5000 } })
    expect(p.acquire(1)).toBeUndefined()
    expect(p.retryAfterMs()).toBe(5000)
    await p.close()
  })

  it('a lease releases exactly once', async () => {
    const p = makePool({ endpoints: ['http://127.0.0.1:1'] })
    const lease = p.acquire(100)
    const ep = p.endpoints()[0]
    expect(ep?.effectiveLoad?.().inflightRequests).toBe(1)
    lease?.release('ok')
    lease?.release('server_error')
    lease?.release('ok')
    expect(ep?.effectiveLoad?.()).toMatchObject({ inflightRequests: 0, inflightTokens: 0 })
    await p.close()
  })

  it('views() lists the usable endpoints; acquire() takes only what `accept` lets through', async () => {
    const p = makePool({ endpoints: ['http://127.0.0.1:1', 'http://127.0.0.1:2'] })
    expect(p.views().map((v) => v.name)).toEqual(['p-0', 'p-1'])
    const lease = p.acquire(10, (v) => v.name === 'p-1')
    expect(lease?.endpoint.name).toBe('p-1')
    expect(p.views().find((v) => v.name === 'p-1')?.effective.inflightRequests).toBe(1)
    expect(p.acquire(10, () => false)).toBeUndefined()
    lease?.release('ok')
    await p.close()
  })
})
