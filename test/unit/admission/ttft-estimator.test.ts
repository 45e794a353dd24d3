import { describe, expect, it } from 'vitest'
import type { DispatchForecast } from '../../../src/admission/dispatch-forecast.js'
import { TtftEstimator } from '../../../src/admission/ttft-estimator.js'
import { ManualClock } from '../../../src/clock.js'

const hints = { stepMs: 15, prefillTokensPerS: 20_000 }
const view = (pendingTokens: number, decodeStepMs = 15) => ({
  endpoints: 1,
  pendingTokens,
  foreignTokens: 0,
  stepMs: undefined,
  residualMs: 0,
  decodeStepMs,
})
const at = (forecast: DispatchForecast | undefined, horizonMs = 1000) => ({ forecast, horizonMs })
const goes = (waitMs: number, withTokens = 0, residualMs = 0, decodeStepMs = 15): DispatchForecast => ({
  waitMs,
  withTokens,
  residualMs,
  decodeStepMs,
})

/** A seeded uniform [0, 1) stream (a linear congruential generator): the same draws every run. */
function lcg(seed: number): () => number {
  let x = seed
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31
    return x / 2 ** 31
  }
}

describe('TtftEstimator', () => {
  it('predicts no queue wait for a request that goes at once, and the prior server time', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    const p = e.predict(view(0), at(goes(0, 0, 5)), 1000, false)
    expect(p.queueMs).toBe(0)
    expect(p.queueFeatures).toBeUndefined()
    // α 0 + β 0.05 ms/token x 1000 + γ 1 x the 15 ms decode step + δ 1 x the 5 ms left in the step in progress
    expect(p.serverMs).toBeCloseTo(50 + 15 + 5, 6)
    expect(p.totalMs).toBe(p.queueMs + p.serverMs)
  })

  it('prices a queued request at its forecast wait, and its step with those sent with it', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    const p = e.predict(view(0), at(goes(120, 2000, 12)), 500, true)
    expect(p.queueMs).toBeCloseTo(120, 6) // prior: the forecast as it is
    expect(p.serverMs).toBeCloseTo(0.05 * 2500 + 15 + 12, 6)
    // not dispatched within the horizon: at least the horizon
    const never = e.predict(view(0), at(undefined, 1000), 500, true)
    expect(never.totalMs).toBeGreaterThan(1000)
  })

  it('measures the dispatch rate (the drain of Retry-After) only while the queue is backlogged', () => {
    const clock = new ManualClock()
    const e = new TtftEstimator(hints, clock)
    expect(e.dispatchRate()).toBeCloseTo(20, 6) // the prior: 20,000 tokens/s
    e.onDispatch(10_000) // not backlogged: no sample
    expect(e.dispatchRate()).toBeCloseTo(20, 6)
    for (let i = 0; i < 400; i++) {
      e.onBacklog(true)
      clock.advance(100)
      e.onDispatch(500) // 5 tokens per ms
      e.onBacklog(false)
      clock.advance(1_000) // idle time does not count
    }
    expect(e.dispatchRate()).toBeCloseTo(5, 1)
    expect(e.drainMs(1_500)).toBeCloseTo(1_500 / e.dispatchRate(), 6)
  })

  it('counts a backlog that has not moved since its last dispatch as draining slower', () => {
    const clock = new ManualClock()
    const e = new TtftEstimator(hints, clock)
    for (let i = 0; i < 400; i++) {
      e.onBacklog(true)
      clock.advance(100)
      e.onDispatch(500) // 5 tokens per ms
    }
    const rate = e.dispatchRate()
    expect(rate).toBeCloseTo(5, 1)
    // still backlogged, nothing dispatched for 2 s: the rate falls while it lasts ...
    clock.advance(2_000)
    expect(e.dispatchRate()).toBeLessThan(rate * 0.9)
    expect(e.drainMs(1_500)).toBeGreaterThan(1_500 / rate)
    // ... and the queue going empty ends the dry spell
    e.onBacklog(false)
    clock.advance(5_000)
    expect(e.dispatchRate()).toBeCloseTo(rate, 6)
  })

  it('fits the server time from dispatch-to-first-token; the queue wait is the forecast', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    const rnd = lcg(11)
    for (let i = 0; i < 600; i++) {
      const own = 100 + rnd() * 2000
      const step = 10 + rnd() * 30
      const residual = rnd() * step
      const queued = rnd() < 0.5
      const f = goes(queued ? rnd() * 300 : 0, rnd() * 3000, residual, step)
      const p = e.predict(view(0), at(f), own, queued)
      const pending = rnd() * 2000
      const server = 5 + 0.025 * (pending + own) + 1.2 * step + 0.9 * residual // the "true" server
      expect(p.queueMs).toBe(queued ? f.waitMs : 0)
      e.observeServer(e.features(pending, own, step, residual), server)
    }
    const p = e.predict(view(0), at(goes(200, 1500, 10, 20)), 1000, true)
    const truth = 200 + 5 + 0.025 * 2500 + 1.2 * 20 + 0.9 * 10
    expect(Math.abs(p.totalMs - truth) / truth).toBeLessThan(0.05)
    const now = e.predict(view(0), at(goes(0, 1000, 10, 20)), 1000, false)
    expect(now.queueMs).toBe(0)
    expect(Math.abs(now.serverMs - (5 + 0.025 * 2000 + 1.2 * 20 + 0.9 * 10)) / now.serverMs).toBeLessThan(
      0.05,
    )
  })

  it('does not learn a server time far over its prediction while such times are the exception', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    const f = e.features(0, 100, 15, 0) // predicted 0.05 x 100 + 15 = 20 ms
    for (let i = 0; i < 6; i++) expect(e.observeServer(f, 20)).toBe(true)
    // two requests that waited seconds at the server for a slot the model does not see
    expect(e.observeServer(f, 2_300)).toBe(false)
    expect(e.observeServer(f, 3_700)).toBe(false)
    expect(e.idleServerMs(100)).toBeCloseTo(20, 0)
    expect(e.state()).toMatchObject({ outliersNotLearned: 2 })
  })

  it('learns them once most recent server times are that far over: the server changed', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    const f = e.features(0, 100, 15, 0)
    for (let i = 0; i < 8; i++) e.observeServer(f, 20)
    const learned = Array.from({ length: 40 }, () => e.observeServer(f, 400))
    // not the first four of the last eight; the fifth makes them most, and from then on all
    expect(learned.slice(0, 4)).toEqual([false, false, false, false])
    expect(learned.slice(4).every(Boolean)).toBe(true)
    expect(e.idleServerMs(100)).toBeGreaterThan(300)
  })

  it('never calls a prompt unreachable on an idle server beyond what the engine facts give', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    // a fit taught a large fixed cost (every time far over, so learned)
    for (let i = 0; i < 40; i++) e.observeServer(e.features(0, 100, 15, 0), 3_000)
    expect(e.idleServerMs(100)).toBeGreaterThan(2_000)
    // one 15 ms step and 100 tokens at 20,000 tokens/s
    expect(e.leastServerMs(100)).toBeCloseTo(15 + 5, 6)
    // and it takes the fit where the fit is the faster
    const fast = new TtftEstimator(hints, new ManualClock())
    for (let i = 0; i < 40; i++) fast.observeServer(fast.features(0, 100, 15, 0), 8)
    expect(fast.leastServerMs(100)).toBeLessThan(15)
  })

  it('starts its fit again when the step it was seeded with turns out far off, while it has few observations', () => {
    const e = new TtftEstimator(hints, new ManualClock()) // seeded with a 15 ms step
    // a slow engine's first first tokens, their decode step priced at the prior's 15 ms
    for (let i = 0; i < 4; i++) e.observeServer(e.features(0, 10, 15, 0), 270)
    expect(e.idleServerMs(10)).toBeGreaterThan(100)
    // its step is measured: 114 ms. The fit is seeded again from it, not scaled up by it
    e.adoptPriors({ stepMs: 114, prefillTokensPerS: 20_000 })
    expect(e.serverMs(e.features(0, 10, 114, 0))).toBeCloseTo(114 + 0.5, 6)
    // a small move of the step does not throw away what it learned since
    for (let i = 0; i < 8; i++) e.observeServer(e.features(0, 10, 114, 0), 160)
    const learned = e.serverMs(e.features(0, 10, 114, 0))
    e.adoptPriors({ stepMs: 120, prefillTokensPerS: 20_000 })
    expect(e.serverMs(e.features(0, 10, 114, 0))).toBeCloseTo(learned, 6)
  })
})
