import { Counter, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { FastCounter } from '../../../src/telemetry/fast-counter.js'

describe('FastCounter', () => {
  it("exports exactly what prom-client's Counter exports for the same increments", async () => {
    const a = new Registry()
    const b = new Registry()
    const labelNames = ['k', 'j'] as const
    const slow = new Counter({ name: 'x_total', help: 'h', labelNames, registers: [a] })
    const fast = new FastCounter({ name: 'x_total', help: 'h', labelNames, registry: b })
    const steps: [Record<'k' | 'j', string>, number | undefined][] = [
      [{ k: 'p', j: 'a' }, undefined],
      [{ k: 'q', j: 'a' }, 0],
      [{ k: 'p', j: 'a' }, 2.5],
      [{ k: 'r', j: 'b"\\\n' }, 1e21],
      [{ k: 'q', j: 'a' }, 3],
      [{ k: 'p', j: 'b' }, 1e-9],
    ]
    // children taken before any increment do not create series
    const slowChild = slow.labels({ k: 'z', j: 'z' })
    const fastChild = fast.labels({ k: 'z', j: 'z' })
    expect(await b.metrics()).toBe(await a.metrics())
    for (const [labels, v] of steps) {
      slow.labels(labels).inc(v)
      fast.labels(labels).inc(v)
    }
    expect(await b.metrics()).toBe(await a.metrics())
    // removal, then an increment through a child held from before: re-appears last, from 0
    const heldSlow = slow.labels({ k: 'p', j: 'a' })
    const heldFast = fast.labels({ k: 'p', j: 'a' })
    slow.remove({ k: 'p', j: 'a' })
    fast.remove({ k: 'p', j: 'a' })
    expect(await b.metrics()).toBe(await a.metrics())
    heldSlow.inc(4)
    heldFast.inc(4)
    slowChild.inc()
    fastChild.inc()
    expect(await b.metrics()).toBe(await a.metrics())
    expect(JSON.stringify(await b.getMetricsAsJSON())).toBe(JSON.stringify(await a.getMetricsAsJSON()))
    slow.reset()
    fast.reset()
    expect(await b.metrics()).toBe(await a.metrics())
    slow.labels({ k: 'p', j: 'a' }).inc()
    heldFast.inc()
    expect(await b.metrics()).toBe(await a.metrics())
  })

  it('rejects what prom-client rejects and runs the collect hook on a read', async () => {
    const r = new Registry()
    let collected = 0
    const c = new FastCounter({
      name: 'y_total',
      help: 'h',
      labelNames: ['k'],
      registry: r,
      collect: () => {
        collected++
      },
    })
    expect(() => c.labels({ k: 'a' }).inc(-1)).toThrow('decrease')
    expect(() => c.labels({ k: 'a' }).inc(Number.POSITIVE_INFINITY)).toThrow('not a valid number')
    expect(() => c.labels({ nope: 'a' } as never)).toThrow('not included')
    await r.metrics()
    expect(collected).toBe(1)
    expect(() => new FastCounter({ name: 'y_total', help: 'h', labelNames: [], registry: r })).toThrow()
  })
})
