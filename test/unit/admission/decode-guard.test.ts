import { describe, expect, it } from 'vitest'
import { DecodeGuard } from '../../../src/admission/decode-guard.js'
import { ManualClock } from '../../../src/clock.js'

const classes = [
  { name: 'interactive', priority: 0, tpotMs: 50 },
  { name: 'batch', priority: 1, tpotMs: undefined },
]

/** Feeds `n` gaps of `gapMs` to `endpoint`, one every `gapMs` of clock time. */
function stream(g: DecodeGuard, clock: ManualClock, endpoint: string, gapMs: number, n: number): void {
  for (let i = 0; i < n; i++) {
    clock.advance(gapMs)
    g.observe(endpoint, gapMs, clock.now())
  }
}

describe('DecodeGuard', () => {
  it('closes an endpoint to every class while its streams decode over the tightest objective above them', () => {
    const clock = new ManualClock()
    const g = new DecodeGuard(classes, 0.1, 200, clock)
    expect(g.allows('batch', 'a')).toBe(true) // nothing measured yet
    stream(g, clock, 'a', 60, 5)
    expect(g.itl('a')).toBeCloseTo(60, 9)
    expect(g.allows('batch', 'a')).toBe(false) // batch holds for interactive's objective
    expect(g.allows('interactive', 'a')).toBe(false)
    expect(g.allows('batch', 'b')).toBe(true) // per endpoint
    stream(g, clock, 'a', 40, 3)
    // the mean moves toward the new gaps, the 60s' weights decaying: ~48 ms after three
    expect(g.itl('a')).toBeLessThan(50)
    expect(g.itl('a')).toBeGreaterThan(45)
    expect(g.allows('batch', 'a')).toBe(false) // over 50 x 0.9
    stream(g, clock, 'a', 40, 3)
    expect(g.itl('a')).toBeLessThan(45)
    expect(g.allows('batch', 'a')).toBe(true) // within 50 x 0.9
  })

  it("tightens a class's limit while its admitted streams end above their TPOT objective, for the classes below too", () => {
    const clock = new ManualClock()
    const g = new DecodeGuard(classes, 0.1, 200, clock, 0.005)
    expect(g.limitMs('interactive')).toBeCloseTo(45, 9)
    expect(g.margins()).toEqual({ interactive: 0.1 }) // batch has no TPOT objective
    stream(g, clock, 'a', 40, 6)
    expect(g.allows('interactive', 'a')).toBe(true)
    // ten streams missed: each widens it by 0.02 x (1 - 0.005)
    for (let i = 0; i < 10; i++) g.judgeTpot('interactive', 55, true)
    expect(g.margin('interactive')).toBeCloseTo(0.299, 9)
    expect(g.limitMs('interactive')).toBeCloseTo(35.05, 9)
    expect(g.limitMs('batch')).toBeCloseTo(35.05, 9) // batch holds for interactive's objective
    expect(g.allows('interactive', 'a')).toBe(false) // 40 ms is now over the limit
    expect(g.allows('batch', 'a')).toBe(false)
    for (let i = 0; i < 200; i++) g.judgeTpot('interactive', 30, true) // met: narrows by 0.02 x 0.005 each
    expect(g.margin('interactive')).toBeCloseTo(0.279, 9)
    g.judgeTpot('batch', 10_000, true) // no objective: nothing to learn
    expect(g.margins()).toEqual({ interactive: 0.279 })
  })

  it('counts in the next step, with the prompts pending there: a long one holding many streams closes the guard', () => {
    const clock = new ManualClock()
    const g = new DecodeGuard(classes, 0.1, 200, clock)
    stream(g, clock, 'a', 40, 10) // a mean of 40 ms over ~4.8 gaps' weight, within 45
    expect(g.allows('interactive', 'a')).toBe(true)
    // a step of 110 ms for 10 streams: (191 + 1,100) / 14.8 = 87 ms
    expect(g.allows('interactive', 'a', undefined, () => ({ stepMs: 110, streams: 10 }))).toBe(false)
    expect(g.allows('batch', 'a', undefined, () => ({ stepMs: 110, streams: 10 }))).toBe(false)
    // a step of 50 ms for one stream: (191 + 50) / 5.8 = 41.8 ms
    expect(g.allows('interactive', 'a', undefined, () => ({ stepMs: 50, streams: 1 }))).toBe(true)
    expect(g.allows('interactive', 'a', undefined, () => ({ stepMs: 110, streams: 0 }))).toBe(true) // no stream waits on it
    expect(g.allows('interactive', 'b', undefined, () => ({ stepMs: 110, streams: 10 }))).toBe(true) // nothing measured there
  })

  it('expects a closed endpoint to reopen when its mean decays to the limit', () => {
    const clock = new ManualClock()
    const g = new DecodeGuard(classes, 0.1, 200, clock)
    expect(g.reopenInMs('a', 'interactive')).toBe(0) // nothing measured
    stream(g, clock, 'a', 60, 5)
    expect(g.allows('interactive', 'a')).toBe(false)
    // 60 ms over a 45 ms limit: 200 x ln(60 / 45)
    expect(g.reopenInMs('a', 'interactive')).toBeCloseTo(57.5, 1)
    stream(g, clock, 'a', 10, 6) // short steps bring it back
    expect(g.allows('interactive', 'a')).toBe(true)
    expect(g.reopenInMs('a', 'interactive')).toBe(0)
  })

  it('keeps the configured margin with a miss target of 0', () => {
    const g = new DecodeGuard(classes, 0.1, 200, new ManualClock(), 0)
    for (let i = 0; i < 10; i++) g.judgeTpot('interactive', 500, true)
    expect(g.limitMs('interactive')).toBeCloseTo(45, 9)
  })

  it('signals each closed window, and each gap that brings the mean within a limit', () => {
    const clock = new ManualClock()
    const g = new DecodeGuard(classes, 0.1, 100, clock)
    let changes = 0
    g.onChange = () => changes++
    stream(g, clock, 'a', 10, 25) // 250 ms: two windows closed (from the first gap, at 10)
    expect(changes).toBe(2)
    const windows: number[] = []
    clock.advance(60)
    windows.push(g.observe('a', 60, clock.now())?.meanMs ?? Number.NaN) // closes the third
    expect(windows[0]).toBeCloseTo((4 * 10 + 60) / 5) // a window's plain mean (gaps 220-250 and this), for engine facts
    expect(changes).toBe(3)
    // 20 gaps of 100 ms at once (a long step of 20 streams): over 45 ms, closed
    for (let i = 0; i < 20; i++) g.observe('a', 100, clock.now() + 100)
    clock.advance(100)
    expect(g.allows('interactive', 'a')).toBe(false)
    const before = changes
    // short steps: the one that brings the mean to 45 ms signals
    while (!g.allows('interactive', 'a')) stream(g, clock, 'a', 5, 1)
    expect(changes).toBe(before + 1)
  })

  it("a window's streams: its gaps' sum over its length", () => {
    const clock = new ManualClock()
    const g = new DecodeGuard(classes, 0.1, 200, clock)
    // three streams on a 20 ms step: three gaps of 20 ms every 20 ms
    let w: ReturnType<DecodeGuard['observe']>
    for (let i = 0; i < 30 && w === undefined; i++) {
      clock.advance(20)
      for (let s = 0; s < 3; s++) w ??= g.observe('a', 20, clock.now())
    }
    expect(w?.meanMs).toBe(20)
    expect(w?.streams).toBeCloseTo(3, 0)
  })

  it('lets go of a limit the endpoint cannot reach (its least step at or over it), and of that limit only', () => {
    const clock = new ManualClock()
    const three = [...classes, { name: 'bulk', priority: 2, tpotMs: 30 }]
    const g = new DecodeGuard(three, 0.1, 200, clock, 0, 0.3)
    g.active = (c) => c === 'interactive'
    stream(g, clock, 'a', 100, 4) // 100 ms a token
    expect(g.allows('interactive', 'a')).toBe(false) // no least step known: held as before
    expect(g.reopenInMs('a', 'interactive')).toBeGreaterThan(0)
    // one sequence decodes at 100 ms there: no batch size gets under 45
    expect(g.allows('interactive', 'a', 100)).toBe(true)
    expect(g.reopenInMs('a', 'interactive', 100)).toBe(0)
    expect(g.window('interactive', 'a', 100)).toMatchObject({ open: true, limitMs: Number.POSITIVE_INFINITY })
    expect(g.limitMs('interactive', 100)).toBe(Number.POSITIVE_INFINITY)
    // a least step of 40: interactive's 45 is reachable and binds; batch's 31.5 and bulk's 27 are not
    expect(g.limitMs('interactive', 40)).toBeCloseTo(45)
    expect(g.limitMs('batch', 40)).toBeCloseTo(45)
    expect(g.limitMs('bulk', 40)).toBeCloseTo(45)
    expect(g.allows('batch', 'a', 40)).toBe(false) // ITL 100 > 45
    // a least step under every limit changes nothing
    expect(g.limitMs('bulk', 10)).toBeCloseTo(27)
  })

  it('forgets an endpoint with no gap for two time constants', () => {
    const clock = new ManualClock()
    const g = new DecodeGuard(classes, 0.1, 200, clock)
    stream(g, clock, 'a', 80, 4)
    expect(g.allows('batch', 'a')).toBe(false)
    clock.advance(400)
    expect(g.allows('batch', 'a')).toBe(false)
    clock.advance(1)
    expect(g.itl('a')).toBeUndefined()
    expect(g.allows('batch', 'a')).toBe(true)
  })

  it('keeps a class below to (1 - headroom) of the limit above while the class above is active', () => {
    const clock = new ManualClock()
    const three = [...classes, { name: 'bulk', priority: 2, tpotMs: 30 }]
    const g = new DecodeGuard(three, 0.1, 200, clock, 0, 0.3)
    let active = true
    g.active = (c) => c === 'interactive' && active
    stream(g, clock, 'a', 40, 6)
    expect(g.limitMs('interactive')).toBeCloseTo(45) // its own limit: no headroom
    expect(g.allows('interactive', 'a')).toBe(true)
    expect(g.limitMs('batch')).toBeCloseTo(31.5) // 45 x 0.7
    expect(g.allows('batch', 'a')).toBe(false)
    // bulk's own objective (27) binds below interactive's 31.5
    expect(g.limitMs('bulk')).toBeCloseTo(27)
    stream(g, clock, 'a', 30, 20) // 600 ms: the 40s weigh e^-3 now
    expect(g.allows('batch', 'a')).toBe(true)
    active = false // interactive idle: batch shares its limit again
    expect(g.limitMs('batch')).toBeCloseTo(45)
    expect(() => new DecodeGuard(classes, 0.1, 200, clock, 0, 1)).toThrow(RangeError)
  })

  it("learns the margin of a class's objective below the classes above from its own streams, while they are active", () => {
    const clock = new ManualClock()
    const g = new DecodeGuard(classes, 0.1, 200, clock, 0.005, 0.3)
    let active = true
    g.active = () => active
    // batch's objective below interactive: 50 x 0.7 = 35 ms, limit 35 x (1 - margin)
    expect(g.judgeTpot('batch', 30, false)).toBe(false) // on track so far: judged at its end
    expect(g.judgeTpot('batch', 40, false)).toBe(true) // already missing 35
    expect(g.judgeTpot('batch', 40, true)).toBe(true)
    expect(g.margins()).toEqual({ interactive: 0.1, 'batch:below': 0.14 })
    expect(g.limitMs('batch')).toBeCloseTo(35 * (1 - 0.1 - 2 * 0.02 * 0.995))
    expect(g.limitMs('interactive')).toBeCloseTo(45) // the class above is not held by it
    active = false // interactive idle: batch's streams teach nothing, and it shares interactive's limit
    expect(g.judgeTpot('batch', 40, true)).toBe(true)
    expect(g.margins()['batch:below']).toBe(0.14)
    expect(g.limitMs('batch')).toBeCloseTo(45)
  })

  it('never holds a class with no objective at or above it', () => {
    const clock = new ManualClock()
    const g = new DecodeGuard([{ name: 'only', priority: 0, tpotMs: undefined }], 0.1, 100, clock)
    stream(g, clock, 'a', 500, 3)
    expect(g.allows('only', 'a')).toBe(true)
  })
})
