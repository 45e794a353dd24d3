/**
 * The TTFT reserve (src/admission/ttft-reserve.ts): batch may dispatch only while an
 * interactive prompt of its recent arrivals' quantile size, sent right after it, is still
 * predicted within interactive's TTFT budget; only while interactive has had arrivals lately.
 */
import { describe, expect, it } from 'vitest'
import { PoolAdmission, Waiting } from '../../../src/admission/pool-admission.js'
import { TtftReserve } from '../../../src/admission/ttft-reserve.js'
import type { Endpoint } from '../../../src/backends/types.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { GatewayError } from '../../../src/errors.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool } from './fake-pool.js'

const CLASSES = [
  { name: 'interactive', priority: 0, reserves: true },
  { name: 'batch', priority: 1, reserves: false },
  { name: 'bulk', priority: 2, reserves: false },
]

describe('TtftReserve', () => {
  it('holds the quantile of the recent arrivals of each class above, while they keep coming', () => {
    const r = new TtftReserve(CLASSES, 0.9, 30_000)
    expect(r.of('batch', 0)).toEqual([]) // no arrival yet
    // 96 arrivals: the quantile is refreshed every 16
    for (let i = 1; i <= 96; i++) r.arrived('interactive', i * 10, 1_000)
    expect(r.of('batch', 1_000)).toEqual([{ className: 'interactive', tokens: 870 }])
    expect(r.of('bulk', 1_000)).toEqual([{ className: 'interactive', tokens: 870 }])
    expect(r.of('interactive', 1_000)).toEqual([]) // nothing above it
    expect(r.of('batch', 31_000)).toEqual([{ className: 'interactive', tokens: 870 }])
    expect(r.of('batch', 31_001)).toEqual([]) // interactive idle for longer than idleMs
    r.arrived('batch', 5_000, 31_001) // a class that holds no reserve: ignored
    expect(r.of('bulk', 31_001)).toEqual([])
    expect(r.state()).toEqual({ interactive: 870 })
  })

  it('knows which classes had an arrival within the idle time, whatever the quantile', () => {
    for (const quantile of [0, 0.99]) {
      const r = new TtftReserve(CLASSES, quantile, 30_000)
      expect(r.active('interactive', 0)).toBe(false)
      r.arrived('interactive', 100, 1_000)
      r.arrived('batch', 100, 1_000)
      expect(r.active('interactive', 31_000)).toBe(true)
      expect(r.active('batch', 31_000)).toBe(true)
      expect(r.active('interactive', 31_001)).toBe(false)
      expect(r.active('bulk', 1_000)).toBe(false)
      expect(r.state()).toEqual(quantile === 0 ? {} : { interactive: 100 })
    }
  })

  it('forgets old arrivals: the quantile follows the last 256', () => {
    const r = new TtftReserve(CLASSES, 0.5, 30_000)
    for (let i = 0; i < 256; i++) r.arrived('interactive', 8_000, 0)
    expect(r.of('batch', 0)[0]?.tokens).toBe(8_000)
    for (let i = 0; i < 256; i++) r.arrived('interactive', 100, 0)
    expect(r.of('batch', 0)[0]?.tokens).toBe(100)
  })
})

describe('a pool keeps the reserve', () => {
  function setup(quantile?: number, admission: Record<string, unknown> = {}) {
    const config = configSchema.parse({
      admission: {
        ...admission,
        // the budget does not bind here: the reserve does
        max_prefill_tokens_per_endpoint: 100_000,
        estimator: { step_ms: 15, prefill_tokens_per_s: 20_000 },
        ...(quantile === undefined ? {} : { ttft_reserve_quantile: quantile }),
      },
      classes: { batch: { max_prefill_share: 1 } },
    })
    const clock = new ManualClock(1_000)
    const pa = new PoolAdmission(new FakePool(), config.classes, config.admission, clock)
    let n = 0
    const place = (cls: string, prompt: number) => {
      const t = new Ticket(`r${n++}`, 'POST', '/v1/chat/completions', clock.now())
      t.bodyBytes = 200
      const w = new Waiting(t, cls, prompt, prompt + 100, {
        queueFeatures: undefined,
        queueMs: 0,
        serverMs: 30,
        totalMs: 30,
      })
      const r = pa.place(w, 't', 1, clock.now() + 600_000)
      return { w, dispatched: r !== w && !(r instanceof GatewayError) }
    }
    return { pa, clock, place }
  }

  it('holds batch once an interactive prompt of the reserve would miss its TTFT budget behind it', () => {
    const { pa, clock, place } = setup()
    // interactive arrivals of 4,000 tokens: ~15 ms + 200 ms at the priors; budget 500 x 0.9 = 450 ms
    for (let i = 0; i < 20; i++) pa.arrived('interactive', 4_000)
    expect(place('batch', 3_000).dispatched).toBe(true) // 7,000 tokens ahead of it: ~365 ms
    const held = place('batch', 3_000) // 10,000: ~515 ms
    expect(held.dispatched).toBe(false)
    expect(pa.depths().find((d) => d.class === 'batch')?.queued).toBe(1)
    // interactive itself is not held by its own reserve
    expect(place('interactive', 4_000).dispatched).toBe(true)
    // interactive stops coming: after the idle time the reserve lapses and batch goes
    clock.advance(30_001)
    pa.pump()
    expect(pa.depths().find((d) => d.class === 'batch')?.queued).toBe(0)
    pa.close()
  })

  it('lets an idle endpoint take a batch prompt larger than the reserve allows, and holds the next', () => {
    const { pa, place } = setup()
    for (let i = 0; i < 20; i++) pa.arrived('interactive', 4_000)
    expect(place('batch', 20_000).dispatched).toBe(true) // ~1.2 s behind it, but nothing else runs
    expect(place('batch', 100).dispatched).toBe(false)
    pa.close()
  })

  it("does not hold batch for a miss it does not cause: the class above's own load, nothing below running", () => {
    const { pa, place } = setup()
    for (let i = 0; i < 20; i++) pa.arrived('interactive', 4_000)
    // 9,000 interactive tokens pending: a 4,000-token arrival misses (~665 ms) with or without batch
    expect(place('interactive', 9_000).dispatched).toBe(true)
    expect(place('batch', 100).dispatched).toBe(true) // holding it would not help
    expect(place('batch', 100).dispatched).toBe(false) // now batch runs: holding it lets the steps shrink
    pa.close()
  })

  it("keeps batch under interactive's decode limit by the headroom while interactive arrives", () => {
    for (const headroom of [0.3, 0]) {
      const { pa, clock, place } = setup(0, { decode_headroom_below: headroom })
      const endpoint = { name: 'main-0' } as Endpoint
      const stream = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
      // streams at 40 ms a token: interactive's limit is 50 x 0.9 = 45, batch's 31.5 with the headroom
      const decode = (ms: number) => {
        for (let t = 0; t < ms; t += 40) {
          clock.advance(40)
          pa.observeGap(endpoint, stream, 40, clock.now())
        }
      }
      decode(400)
      pa.arrived('interactive', 500)
      expect(place('batch', 100).dispatched).toBe(headroom === 0)
      expect(place('interactive', 500).dispatched).toBe(true)
      if (headroom > 0) {
        decode(30_040) // interactive idle for longer than ttft_reserve_idle_ms: batch shares its limit
        pa.pump()
        expect(pa.depths().find((d) => d.class === 'batch')?.queued).toBe(0)
      }
      pa.close()
    }
  })

  it('keeps nothing with ttft_reserve_quantile 0, or before interactive arrives', () => {
    for (const [quantile, arrivals] of [
      [0, 20],
      [undefined, 0],
    ] as const) {
      const { pa, place } = setup(quantile)
      for (let i = 0; i < arrivals; i++) pa.arrived('interactive', 4_000)
      expect([1, 2, 3].map(() => place('batch', 3_000).dispatched)).toEqual([true, true, true])
      pa.close()
    }
  })
})
