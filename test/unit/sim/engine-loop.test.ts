import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src/clock.js'
import { SimEngine } from '../../../src/sim/engine.js'
import { EngineLoop } from '../../../src/sim/engine-loop.js'
import { Rng } from '../../../src/sim/rng.js'
import { SimRequest } from '../../../src/sim/sim-request.js'
import { measureTimerLag } from '../../../src/sim/timer-baseline.js'
import { gaps, RecordingSink, testProfile } from './helpers.js'

function setup(wakeLateMs = 0, slowdown: () => number = () => 1) {
  const clock = new ManualClock(1000)
  clock.wakeLateMs = wakeLateMs
  const engine = new SimEngine({
    profile: testProfile({}, { per_context_token_ms: 0, per_prefill_token_ms: 0 }),
    slowdown,
  })
  const loop = new EngineLoop(engine, clock)
  let n = 0
  const submit = (prompt: number, out: number) => {
    const sink = new RecordingSink(() => clock.now())
    const req = new SimRequest({
      id: `r${n++}`,
      promptTokens: prompt,
      targetOutput: out,
      finishReason: 'length',
      blockHashes: [],
      sink,
      arrival: clock.now(),
    })
    engine.submit(req)
    loop.kick()
    return { req, sink }
  }
  return { clock, engine, loop, submit }
}

describe('EngineLoop', () => {
  it('holds no timer while idle, and none after the work is done', () => {
    const { clock, loop, submit } = setup()
    expect(clock.pendingTimers).toBe(0)
    loop.kick()
    clock.runUntilIdle()
    expect(clock.pendingTimers).toBe(0)
    const { sink } = submit(10, 5)
    expect(clock.pendingTimers).toBe(1)
    clock.runUntilIdle()
    expect(sink.times).toHaveLength(5)
    expect(clock.pendingTimers).toBe(0)
    expect(loop.active).toBe(false)
  })

  it('schedules steps on absolute time: late wake-ups do not accumulate (no drift)', () => {
    const { clock, engine, submit } = setup(0.7)
    const { req } = submit(10, 200)
    const times: number[] = []
    req.sink.onToken = (r) => {
      times.push(r.lastToken)
    }
    clock.runUntilIdle()
    expect(times).toHaveLength(200)
    // every step here is base 5 ms + 0.1 ms per decoding sequence; the schedule starts when the
    // first step does and token k is due at start + 5 + (k-1)*5.1, whatever the timer lateness
    const start = req.firstScheduled
    const expected = 5 + 199 * 5.1
    expect(times[199]! - start).toBeCloseTo(expected, 6)
    for (const g of gaps(times)) expect(g).toBeCloseTo(5.1, 9)
    // the wall clock ends one lag behind the schedule, not 200 lags
    expect(clock.now() - start).toBeCloseTo(expected + 0.7, 6)
    expect(engine.stats.stepLag.count).toBe(200)
    expect(engine.stats.stepLag.sum).toBeCloseTo((200 * 0.7) / 1000, 9)
  })

  it('batches arrivals of the same tick into one step and admits later ones at the next step', () => {
    const { clock, engine, submit } = setup()
    submit(10, 3)
    submit(10, 3)
    clock.advance(0)
    expect(engine.numRunning).toBe(2)
    submit(10, 3) // arrives mid-step
    expect(engine.numWaiting).toBe(1)
    clock.advance(5)
    expect(engine.numRunning).toBe(3)
  })

  it('a slow-down set or cleared mid-step rescales what is left of the step in flight', () => {
    let slow = 1
    const { clock, loop, submit } = setup(0, () => slow)
    const { sink } = submit(10, 3)
    clock.advance(0) // the first step begins at 1000: 5 ms
    slow = 10_000
    clock.advance(6) // it ends at 1005 at the normal pace; the second begins stalled (5.1 ms x 10,000)
    expect(sink.times).toEqual([1005])
    clock.advance(1_000)
    expect(sink.times).toHaveLength(1)
    slow = 1
    loop.rescale(1 / 10_000) // the stall clears at 2006: the 49,999 ms left become 5 ms
    clock.advance(5)
    expect(sink.times).toHaveLength(2)
    expect(sink.times[1]!).toBeCloseTo(2011, 3)
    // the other way: a slow-down set mid-step stretches what is left (4.1 of 5.1 ms, x4)
    clock.advance(1)
    slow = 4
    loop.rescale(4)
    clock.advance(15)
    expect(sink.times).toHaveLength(2)
    clock.advance(2)
    expect(sink.times).toHaveLength(3)
    expect(sink.times[2]!).toBeCloseTo(2012 + 4 * 4.1, 3)
  })

  it('is deterministic: the same seed gives the same output lengths', () => {
    const a = new Rng(42)
    const b = new Rng(42)
    const xs = Array.from({ length: 5 }, () => a.next())
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(xs)
  })
})

describe('measureTimerLag', () => {
  it('reports the lateness of a bare absolute-schedule timer loop', async () => {
    const clock = new ManualClock()
    clock.wakeLateMs = 0.25
    const p = measureTimerLag(7, 20, clock)
    clock.runUntilIdle()
    const r = await p
    expect(r.n).toBe(20)
    expect(r.p50).toBeCloseTo(0.25, 9)
    expect(r.max).toBeCloseTo(0.25, 9)
  })
})
