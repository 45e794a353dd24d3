import { describe, expect, it } from 'vitest'
import { TtftEstimator } from '../../../src/admission/ttft-estimator.js'
import { ManualClock } from '../../../src/clock.js'

const hints = { stepMs: 15, prefillTokensPerS: 20_000 }
const view = (pendingTokens: number, stepMs?: number) => ({
  endpoints: 1,
  pendingTokens,
  foreignTokens: 0,
  stepMs,
  residualMs: 0,
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
    const p = e.predict(view(0), undefined, 1000)
    expect(p.queueMs).toBe(0)
    // α 0 + β 0.05 ms/token x 1000 + γ 1.5 x the 15 ms step prior
    expect(p.serverMs).toBeCloseTo(50 + 22.5, 6)
    expect(p.totalMs).toBe(p.queueMs + p.serverMs)
  })

  it('measures the dispatch rate only while the queue is backlogged', () => {
    const clock = new ManualClock()
    const e = new TtftEstimator(hints, clock)
    expect(e.dispatchRate()).toBeCloseTo(20, 6) // the prior: 20,000 tokens/s
    e.onDispatch(10_000, 0, false) // not backlogged: no sample
    expect(e.dispatchRate()).toBeCloseTo(20, 6)
    for (let i = 0; i < 400; i++) {
      e.onBacklog(true)
      clock.advance(100)
      e.onDispatch(500, 0, true) // 5 tokens per ms
      e.onBacklog(false)
      clock.advance(1_000) // idle time does not count
    }
    expect(e.dispatchRate()).toBeCloseTo(5, 1)
    // the queue part prices tokens ahead at the measured rate (prior κ 0, λ = μ = 1)
    const p = e.predict(view(0), 1_000, 500)
    expect(p.queueMs).toBeCloseTo((1_000 + 500) / e.dispatchRate(), 6)
  })

  it('counts a backlog that has not moved since its last dispatch as draining slower', () => {
    const clock = new ManualClock()
    const e = new TtftEstimator(hints, clock)
    for (let i = 0; i < 400; i++) {
      e.onBacklog(true)
      clock.advance(100)
      e.onDispatch(500, 0, true) // 5 tokens per ms
    }
    const rate = e.dispatchRate()
    expect(rate).toBeCloseTo(5, 1)
    // still backlogged, nothing dispatched for 2 s: the rate falls while it lasts ...
    clock.advance(2_000)
    expect(e.dispatchRate()).toBeLessThan(rate * 0.9)
    const stalled = e.predict(view(0), 1_000, 500).queueMs
    expect(stalled).toBeGreaterThan((1_000 + 500) / rate)
    // ... and the queue going empty ends the dry spell
    e.onBacklog(false)
    clock.advance(5_000)
    expect(e.dispatchRate()).toBeCloseTo(rate, 6)
  })

  it('fits the server time from dispatch-to-first-token and the queue wait from arrival-to-dispatch', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    const rnd = lcg(11)
    for (let i = 0; i < 600; i++) {
      const own = 100 + rnd() * 2000
      const step = 10 + rnd() * 30
      const ahead = rnd() < 0.5 ? undefined : rnd() * 5000
      const roomMs = rnd() * 100
      const p = e.predict(view(rnd() * 2000, step), ahead, own, roomMs)
      // a queued request meets what is pending when its endpoint has room (here 0..1000)
      const pending = ahead === undefined ? rnd() * 2000 : rnd() * 1000
      e.onDispatch(own, pending, ahead !== undefined)
      const server = 5 + 0.025 * (pending + own) + 1.2 * step // the "true" server
      const wait = ahead === undefined ? 0 : 30 + 0.8 * roomMs + (0.5 * ahead + 0.2 * own) / e.dispatchRate()
      e.observeQueue(p, wait)
      e.observeServer(e.features(pending, own, step), server)
    }
    // queued: the queue part, and the server part at the mean pending queued requests met (~500)
    const p = e.predict(view(2000, 20), 2000, 1000, 50)
    const truth =
      5 + 0.025 * (500 + 1000) + 1.2 * 20 + 30 + 0.8 * 50 + (0.5 * 2000 + 0.2 * 1000) / e.dispatchRate()
    expect(Math.abs(p.totalMs - truth) / truth).toBeLessThan(0.05)
    // at once: the pending there now
    const now = e.predict(view(1000, 20), undefined, 1000)
    expect(now.queueMs).toBe(0)
    expect(Math.abs(now.serverMs - (5 + 0.025 * 2000 + 1.2 * 20)) / now.serverMs).toBeLessThan(0.05)
  })

  it('learns the waits of requests refused from the queue too, not only the short waits that got through', () => {
    // the queue's true wait is noisy around its structure; a request still waiting at 300 ms
    // is refused then (early refusal): fitted to the dispatched alone, the model sees only the
    // lucky ones and under-predicts; told the least the refused would have waited (300 ms so
    // far, or the prompts ahead of them at the dispatch rate, the larger), far less so
    const run = (learnRefused: boolean) => {
      const e = new TtftEstimator(hints, new ManualClock())
      const rnd = lcg(7)
      for (let i = 0; i < 2_000; i++) {
        const ahead = rnd() * 12_000
        const p = e.predict(view(0), ahead, 500)
        const wait = 20 + (ahead + 500) / e.dispatchRate() + (rnd() - 0.5) * 300
        if (wait <= 300) e.observeQueue(p, wait)
        else if (learnRefused) e.observeQueueRefused(p, Math.max(300, e.drainMs(ahead + 500)))
      }
      const ahead = 11_000
      const truth = 20 + 11_500 / e.dispatchRate()
      return Math.abs(e.predict(view(0), ahead, 500).queueMs - truth) / truth
    }
    const survivors = run(false)
    const both = run(true)
    expect(survivors).toBeGreaterThan(0.2)
    expect(both).toBeLessThan(survivors / 2)
  })

  it('learns nothing of the queue from a refused request that never queued, or waited less than predicted', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    const before = e.predict(view(0), 10_000, 500).queueMs
    e.observeQueueRefused(e.predict(view(0), undefined, 500), 10_000) // it went at once: no queue features
    expect(e.predict(view(0), 10_000, 500).queueMs).toBe(before)
    e.observeQueueRefused(e.predict(view(0), 10_000, 500), before / 2) // a lower bound below the prediction
    expect(e.predict(view(0), 10_000, 500).queueMs).toBe(before)
    e.observeQueueRefused(e.predict(view(0), 10_000, 500), 10 * before)
    expect(e.predict(view(0), 10_000, 500).queueMs).toBeGreaterThan(before)
  })

  it('prices the wait for the prefill budget to have room into a queued request, from the start', () => {
    // A request queued behind a prompt expected to have its first token in 2.4 s (nothing ahead
    // in the gateway) waits for that, and goes: then runs its own at the server (met at
    // dispatch: nothing pending yet, the estimator has seen no dispatch).
    const e = new TtftEstimator({ stepMs: 15, prefillTokensPerS: 250 }, new ManualClock())
    const p = e.predict(view(604, 15), 0, 8, 2_400)
    expect(p.queueMs).toBeCloseTo(2_400, 6)
    expect(p.serverMs).toBeCloseTo(8 * 4 + 1.5 * 15, 6)
    expect(e.predict(view(0, 15), undefined, 8).totalMs).toBeLessThan(100)
  })

  it("counts a queued request's own prompt at the dispatch rate only behind a queue, not at its head", () => {
    // At the head, the wait for the prefill budget to have room for it (B) is its wait: a
    // long prompt there waits no longer than a short one for the same B. Behind a queue, the
    // budget fills with the requests ahead and frees for its own at the dispatch rate.
    const e = new TtftEstimator({ stepMs: 15, prefillTokensPerS: 1_000 }, new ManualClock())
    const headShort = e.predict(view(0), 0, 100, 50).queueMs
    const headLong = e.predict(view(0), 0, 3_000, 50).queueMs
    expect(headLong).toBeCloseTo(headShort, 6)
    expect(headLong).toBeCloseTo(50, 6)
    const behindShort = e.predict(view(0), 2_000, 100, 50).queueMs
    const behindLong = e.predict(view(0), 2_000, 3_000, 50).queueMs
    expect(behindLong - behindShort).toBeCloseTo(2_900 / 1, 6) // 2,900 tokens more at 1 token/ms
  })
})
