import { Counter, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { SeriesCache } from '../../../src/telemetry/series-cache.js'

describe('SeriesCache', () => {
  it('returns one child per label values, whichever accessor is used', () => {
    const r = new Registry()
    const c = new Counter({ name: 'c_total', help: 'h', labelNames: ['a', 'b', 'c', 'd'], registers: [r] })
    const cache = new SeriesCache(c, ['a', 'b', 'c', 'd'] as const)
    const x = cache.get4('1', '2', '3', '4')
    expect(cache.get(['1', '2', '3', '4'])).toBe(x)
    expect(cache.get4('1', '2', '3', '5')).not.toBe(x)
    expect(cache.get4('1', '2', '', '4')).not.toBe(x)
    expect(cache.size).toBe(3)
  })

  it('removes series by one label and creates them afresh afterwards', async () => {
    const r = new Registry()
    const c = new Counter({ name: 'c_total', help: 'h', labelNames: ['k', 'tenant'], registers: [r] })
    const cache = new SeriesCache(c, ['k', 'tenant'] as const)
    cache.get2('x', 'a').inc()
    cache.get2('x', 'b').inc(2)
    cache.get2('y', 'a').inc(3)
    const three = new SeriesCache(
      new Counter({ name: 'd_total', help: 'h', labelNames: ['p', 'q', 'tenant'], registers: [r] }),
      ['p', 'q', 'tenant'] as const,
    )
    three.get3('p', 'q', 'a').inc()
    three.get3('p', 'r', 'b').inc()
    expect(cache.removeWhere('tenant', 'a')).toBe(2)
    expect(three.removeWhere('tenant', 'a')).toBe(1)
    expect(cache.size).toBe(1)
    expect(three.size).toBe(1)
    const text = await r.metrics()
    expect(text).not.toContain('tenant="a"')
    expect(text).toContain('c_total{k="x",tenant="b"} 2')
    cache.get2('y', 'a').inc(5)
    three.get3('p', 'q', 'a').inc(7)
    const after = await r.metrics()
    expect(after).toContain('c_total{k="y",tenant="a"} 5')
    expect(after).toContain('d_total{p="p",q="q",tenant="a"} 7')
    expect(cache.size).toBe(2)
  })
})
