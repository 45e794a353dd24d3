import { describe, expect, it } from 'vitest'
import { TtftEstimator } from '../../../src/admission/ttft-estimator.js'
import { ManualClock } from '../../../src/clock.js'

const hints = { stepMs: 15, prefillTokensPerS: 20_000 }
const view = (pendingTokens: number, stepMs?: number) => ({ endpoints: 1, pendingTokens, stepMs })

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
    // the queue part prices tokens ahead at the measured rate (prior κ 0, λ = μ = 1)
    const p = e.predict(view(0), 1_000, 500)
    expect(p.queueMs).toBeCloseTo((1_000 + 500) / e.dispatchRate(), 6)
  })

  it('fits the server time from dispatch-to-first-token and the queue wait from arrival-to-dispatch', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    let seed = 11
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    for (let i = 0; i < 600; i++) {
      const pending = rnd() * 2000
      const own = 100 + rnd() * 2000
      const step = 10 + rnd() * 30
      const ahead = rnd() < 0.5 ? undefined : rnd() * 5000
      const p = e.predict(view(pending, step), ahead, own)
      const server = 5 + 0.025 * (pending + own) + 1.2 * step // the "true" server
      const wait = ahead === undefined ? 0 : 30 + (0.5 * ahead + 0.2 * own) / e.dispatchRate()
      e.observeQueue(p, wait)
      e.observeServer(e.features(pending, own, step), server)
      e.judge(p, wait + server)
    }
    const p = e.predict(view(1000, 20), 2000, 1000)
    const truth = 5 + 0.025 * 2000 + 1.2 * 20 + 30 + (0.5 * 2000 + 0.2 * 1000) / e.dispatchRate()
    expect(Math.abs(p.totalMs - truth) / truth).toBeLessThan(0.05)
    const s = e.state() as { meanAbsRelativeError: number }
    expect(s.meanAbsRelativeError).toBeLessThan(0.05)
  })
})
