import { describe, expect, it } from 'vitest'
import { cacheHoldMs, type HoldInputs, recomputeRefusalMs } from '../../../src/admission/cache-hold.js'
import type { EndpointView } from '../../../src/backends/types.js'

/** Endpoints by name only: cacheHoldMs reads them through the functions it is given. */
const views = ['a', 'b', 'c'].map((name) => ({ name }) as EndpointView)
const [a, b, c] = views as [EndpointView, EndpointView, EndpointView]

/** `a` is the home, closed, holding 3,000 of the prompt's tokens; `b` holds 500; 0.1 ms per token. */
function inputs(over: Partial<HoldInputs> = {}): HoldInputs {
  const cached = new Map([
    [a, 3_000],
    [b, 500],
    [c, 0],
  ])
  return {
    views,
    open: (v) => v !== a,
    home: a,
    cachedAt: (v) => cached.get(v) ?? 0,
    reopenInMs: () => 100,
    msPerToken: 0.1,
    heldMs: 0,
    ...over,
  }
}

describe('cacheHoldMs', () => {
  it('holds for the home while it reopens sooner than the open endpoints would recompute what it holds', () => {
    // saved: (3,000 - 500) x 0.1 = 250 ms of prefill; the home opens in 100
    expect(cacheHoldMs(inputs())).toBe(100)
    expect(cacheHoldMs(inputs({ reopenInMs: () => 249 }))).toBe(249)
    expect(cacheHoldMs(inputs({ reopenInMs: () => 250 }))).toBe(0) // no gain: it goes now
    // the best open endpoint is what the home is weighed against
    expect(cacheHoldMs(inputs({ cachedAt: (v) => (v === a ? 3_000 : 2_500) }))).toBe(0)
  })

  it('counts the hold so far: holds in a row never cost more than the recompute they avoid', () => {
    expect(cacheHoldMs(inputs({ heldMs: 140 }))).toBe(100)
    expect(cacheHoldMs(inputs({ heldMs: 150 }))).toBe(0)
  })

  it('does not hold when the home is open, has nothing cached, is unknown, or nothing else is open', () => {
    expect(cacheHoldMs(inputs({ open: () => true }))).toBe(0)
    expect(cacheHoldMs(inputs({ cachedAt: () => 0 }))).toBe(0)
    expect(cacheHoldMs(inputs({ home: undefined }))).toBe(0)
    expect(cacheHoldMs(inputs({ open: () => false }))).toBe(0) // it waits in the queue anyway
    expect(cacheHoldMs(inputs({ msPerToken: 0 }))).toBe(0) // nothing learned: no price to weigh
    expect(cacheHoldMs(inputs({ reopenInMs: () => 0 }))).toBe(0)
    // 280 ms is more than the 250 b would take to recompute, less than c's 300 (it holds nothing)
    expect(cacheHoldMs(inputs({ reopenInMs: () => 280 }))).toBe(0)
    expect(cacheHoldMs(inputs({ reopenInMs: () => 280, open: (v) => v === c }))).toBe(280)
  })

  it('past capacity, holds while its home can still serve it in time', () => {
    // 400 ms to reopen: more than the 250 ms recompute, so only the busy rule can hold it
    const slow = { reopenInMs: () => 400 }
    expect(cacheHoldMs(inputs({ ...slow, slackMs: 10_000 }))).toBe(0) // not busy: it goes now
    expect(cacheHoldMs(inputs({ ...slow, busy: true, slackMs: 401 }))).toBe(400) // home in time
    expect(cacheHoldMs(inputs({ ...slow, busy: true, slackMs: 400 }))).toBe(0) // home too late: it goes now
    expect(cacheHoldMs(inputs({ ...slow, busy: true }))).toBe(0) // no slack known: none
    // the home must still hold more than the open ones, and nothing else changes
    expect(cacheHoldMs(inputs({ ...slow, busy: true, slackMs: 10_000, cachedAt: () => 500 }))).toBe(0)
    expect(cacheHoldMs(inputs({ busy: true, slackMs: 0 }))).toBe(100) // the first rule still holds
  })
})

describe('recomputeRefusalMs', () => {
  // a 4,000-token prompt: 1,000 to compute at its home (a), 3,500 at b (holds 500)
  const late = { reopenInMs: () => 400, busy: true, slackMs: 400 }
  it('past capacity, refuses a request its home cannot serve in time when elsewhere it computes more than twice as much', () => {
    expect(recomputeRefusalMs(inputs(late), 4_000)).toBe(400) // Retry-After: when its home reopens
    expect(recomputeRefusalMs(inputs({ ...late, slackMs: 401 }), 4_000)).toBeUndefined() // home in time: held instead
    expect(recomputeRefusalMs(inputs({ ...late, busy: false }), 4_000)).toBeUndefined() // below capacity: it goes
  })

  it('lets it go elsewhere when the recompute costs at most twice its compute at home, or nothing is open', () => {
    // 5,500 tokens: 2,500 at home, 5,000 at b: exactly twice
    expect(recomputeRefusalMs(inputs(late), 5_500)).toBeUndefined()
    expect(recomputeRefusalMs(inputs(late), 5_499)).toBe(400)
    expect(recomputeRefusalMs(inputs({ ...late, open: () => false }), 4_000)).toBeUndefined()
    expect(recomputeRefusalMs(inputs({ ...late, open: () => true }), 4_000)).toBeUndefined() // home open
    expect(
      recomputeRefusalMs(inputs({ ...late, reopenInMs: () => Number.POSITIVE_INFINITY }), 4_000),
    ).toBeUndefined()
  })
})
