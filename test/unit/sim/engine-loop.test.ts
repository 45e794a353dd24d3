import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src/clock.js'
import { SimEngine } from '../../../src/sim/engine.js'
import { EngineLoop } from '../../../src/sim/engine-loop.js'
import { Rng } from '../../../src/sim/rng.js'
import { SimRequest } from '../../../src/sim/sim-request.js'
import { measureTimerLag } from '../../../src/sim/timer-baseline.js'
import { gaps, RecordingSink, testProfile } from './helpers.js'

function setup(wakeLateMs = 0) {
  const clock = new ManualClock(1000)
  clock.wakeLateMs = wakeLateMs
  const engine = new SimEngine({
    profile: testProfile({}, { per_context_token_ms: 0, per_prefill_token_ms: 0 }),
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
