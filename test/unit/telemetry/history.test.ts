/**
 * What the dashboard draws from telemetry (Telemetry.history()): the rolling windows'
 * 5-second slots, degradations by action, the predicted-against-actual TTFT ring and the
 * cost per 1K tokens per tenant, all on a manual clock.
 */
import { describe, expect, it } from 'vitest'
import { SLOT_MS } from '../../../src/telemetry/rolling-windows.js'
import { TtftScatter } from '../../../src/telemetry/ttft-scatter.js'
import { setup, ticket } from './fixtures.js'

describe('telemetry history for the dashboard', () => {
  it('gives the last 5 minutes slot by slot, adding up to the 5-minute window', () => {
    const { telemetry, clock } = setup()
    const start = clock.now()
    // 100 s: each second one good request, every 10 s a refusal and a degraded request
    for (let s = 0; s < 100; s++) {
      const at = start + s * 1_000
      clock.advance(at + 500 - clock.now())
      telemetry.record(ticket(at, { ttft: 100 + s, e2e: 400, chunks: 11, predictedTtftMs: 90 + s }))
      if (s % 10 === 0) {
        telemetry.record(ticket(at, { outcome: 'rejected', errorCode: 'ttft_slo' }))
        telemetry.record(
          ticket(at, { ttft: 50, e2e: 300, chunks: 11, degraded: ['cap_max_tokens:512', 'demote_to_batch'] }),
        )
      }
    }
    const h = telemetry.history()
    const s = h.series.interactive!
    expect(s.slotMs).toBe(SLOT_MS)
    expect(s.offered).toHaveLength(60)
    const sum = (a: number[]) => a.reduce((x, y) => x + y, 0)
    const w = h.windows.interactive!['5m']
    expect(sum(s.offered)).toBe(w.offered)
    expect(sum(s.good)).toBe(w.good)
    expect(sum(s.rejected)).toBe(w.rejected)
    expect(sum(s.admitted)).toBe(w.admitted)
    expect(w.offered).toBe(120)
    // slots before the telemetry began cover nothing; the last covers part of its 5 s
    expect(s.spanS[0]).toBe(0)
    expect(sum(s.spanS)).toBeCloseTo((clock.now() - start) / 1000, 6)
    expect(s.startAgoMs).toBeGreaterThanOrEqual(295_000)
    expect(s.ttftP99.at(-1)).not.toBeNull()
    expect(s.ttftP50[0]).toBeNull()
    expect(w.degradationsByAction).toEqual({ cap_max_tokens: 10, demote_to_batch: 10 })
    expect(w.degraded).toBe(10)

    // the scatter: each streamed request with a prediction, predicted then actual
    const sc = h.scatter.interactive!
    expect(sc.points).toHaveLength(100)
    expect(sc.points[0]).toEqual([90, 100, expect.any(Number), 'main'])
    expect(sc.error.n).toBe(100)
    expect(sc.error.meanRelative).toBeLessThan(0)
    expect(h.scatter.batch!.points).toEqual([])
  })

  it('keeps cost per 1K tokens per tenant over 5 minutes, from the cost attributor', () => {
    const { telemetry, clock } = setup(undefined)
    const at = clock.now()
    const usage = { promptTokens: 900, completionTokens: 100 }
    telemetry.record(ticket(at, { tenant: 'acme', ttft: 50, e2e: 200, chunks: 100, usage }))
    telemetry.record(ticket(at, { tenant: 'acme', ttft: 50, e2e: 200, chunks: 100, usage }))
    telemetry.record(ticket(at, { tenant: 'beta', ttft: 50, e2e: 200, chunks: 100, usage }))
    clock.advance(10_000) // one cost interval closes on the next tick: 2 endpoints x 3.6/h x 10 s
    const t = telemetry.history().tenants
    expect(t.map((x) => [x.tenant, x.tokens])).toEqual([
      ['acme', 2000],
      ['beta', 1000],
    ])
    const bill = 2 * 3.6 * (10 / 3600)
    expect(t[0]!.cost + t[1]!.cost).toBeCloseTo(bill, 9)
    expect(t[0]!.cost).toBeCloseTo((bill * 2) / 3, 9)
    expect(t[0]!.costPer1kTokens).toBeCloseTo(t[0]!.cost / 2, 9)
    clock.advance(301_000)
    expect(telemetry.history().tenants).toEqual([])
  })

  it('keeps only the last points of the TTFT scatter, oldest first', () => {
    const sc = new TtftScatter(3)
    for (let i = 1; i <= 5; i++) sc.add(i, 'p', i * 10, i * 20)
    sc.add(6, 'p', 10, 0) // no actual TTFT: not a point
    expect(sc.points().map((p) => p.at)).toEqual([3, 4, 5])
    expect(sc.error()).toEqual({ n: 3, meanAbsRelative: 0.5, meanRelative: -0.5 })
    expect(() => new TtftScatter(0)).toThrow(RangeError)
  })
})
