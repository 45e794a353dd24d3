import { Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { FastHistogram } from '../../../src/telemetry/fast-histogram.js'

describe('FastHistogram', () => {
  it("exports exactly what prom-client's Histogram exports for the same observations", async () => {
    const buckets = [0.005, 0.05, 0.5, 1, 2.5]
    const values = [0, 0.005, 0.0050001, 0.05, 0.3, 0.5, 0.5000001, 1, 2.5, 3, 1e9, -1]
    const a = new Registry()
    const b = new Registry()
    const slow = new Histogram({ name: 'x_seconds', help: 'h', labelNames: ['k'], buckets, registers: [a] })
    const fast = new FastHistogram({ name: 'x_seconds', help: 'h', labelNames: ['k'], buckets, registry: b })
    for (const k of ['p', 'q']) {
      const child = fast.labels({ k })
      for (const v of values) {
        slow.observe({ k }, v)
        child.observe(v)
      }
    }
    expect(await b.metrics()).toBe(await a.metrics())
  })

  it('ignores non-finite values, removes and resets series', async () => {
    const r = new Registry()
    const h = new FastHistogram({ name: 'y', help: 'h', labelNames: ['k'], buckets: [1], registry: r })
    h.labels({ k: 'a' }).observe(Number.NaN)
    h.labels({ k: 'a' }).observe(Number.POSITIVE_INFINITY)
    h.labels({ k: 'b' }).observe(0.5)
    const text = await r.metrics()
    expect(text).toContain('y_count{k="a"} 0')
    expect(text).toContain('y_bucket{le="1",k="b"} 1')
    h.remove({ k: 'b' })
    expect(await r.metrics()).not.toContain('k="b"')
    h.reset()
    expect(await r.metrics()).not.toContain('k="a"')
  })
})
