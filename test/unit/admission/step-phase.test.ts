/**
 * Where an endpoint's engine is in its step: a request sent now waits for the step in
 * progress to end, then is prefilled after the prompts the server already has. The gateway
 * sees each step end as the token it brings every stream there, so it knows when the step in
 * progress began, which prompts it had sent before then (the server took them into that
 * step), and, by the endpoint's step model (step-timeline.ts), how long that step has left;
 * the estimator prices that time, not a mean step.
 */
import { describe, expect, it } from 'vitest'
import { PrefillLedger } from '../../../src/admission/prefill-ledger.js'
import { TtftEstimator } from '../../../src/admission/ttft-estimator.js'
import { ManualClock } from '../../../src/clock.js'
import { gatesOnOneEndpoint } from './fake-pool.js'

const hints = { stepMs: 15, prefillTokensPerS: 20_000 }

const setup = gatesOnOneEndpoint

describe('PrefillLedger.sentBy', () => {
  it('counts the pending prompts sent before a time, until each is uncounted', () => {
    const l = new PrefillLedger()
    const a = l.add('e0', 1000, 50, undefined, 10)
    l.add('e0', 500, 80, undefined, 20)
    // one sent at the very moment a step began was sent on hearing it: not in that step
    expect([l.sentBy('e0', 10), l.sentBy('e0', 11), l.sentBy('e0', 21), l.sentBy('e1', 21)]).toEqual([
      0, 1000, 1500, 0,
    ])
    a()
    expect(l.sentBy('e0', 21)).toBe(500)
  })
})

describe('TtftEstimator: the step in progress', () => {
  it('adds to the server time a request is predicted, ms for ms at the prior', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    const view = {
      endpoints: 1,
      pendingTokens: 0,
      foreignTokens: 0,
      stepMs: 20,
      residualMs: 0,
      decodeStepMs: 10,
    }
    const at = (residualMs: number) =>
      e.predict(
        view,
        { forecast: { waitMs: 0, withTokens: 0, residualMs, decodeStepMs: 10 }, horizonMs: 1000 },
        500,
        false,
      ).serverMs
    expect(at(30) - at(0)).toBeCloseTo(30, 6)
  })
})

describe('EndpointGates.phase', () => {
  it('knows no step in progress before the first token from an endpoint', () => {
    const { gates, view } = setup()
    gates.dispatched(view.name, 2_000, 100)
    expect(gates.phase(view.name)).toEqual({ inStepTokens: 0, residualMs: 0 })
  })

  it('takes the prompts sent before the step began as in it, and prices its time left by the step model', () => {
    const { gates, clock, view } = setup()
    const stream = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
    gates.tokenFrom(view.name, stream, clock.now()) // a stream decoding there (its first token ends a step)
    gates.firstToken(view.name, clock.now(), 100)
    clock.advance(2)
    gates.dispatched(view.name, 400, 100) // sent at 1002
    clock.advance(5)
    gates.tokenFrom(view.name, stream, clock.now()) // its next token, at 1007: a new step, with the 400
    const model = gates.timeline(view.name).model
    const length = model.ms(400, 1, 102)
    clock.advance(5)
    gates.dispatched(view.name, 1_000, 100) // sent at 1012: waits for the next step
    clock.advance(10)
    // at 1022: the step began 15 ms ago
    const phase = gates.phase(view.name)
    expect(phase.inStepTokens).toBe(400)
    expect(phase.residualMs).toBeCloseTo(length - 15, 6)
    // the estimator's view: the prompts after the step (1,000) pending, and that time left
    const v = gates.serverView([view], 512)
    expect(v.pendingTokens).toBe(1_000)
    expect(v.residualMs).toBeCloseTo(length - 15, 6)
    expect(v.decodeStepMs).toBeCloseTo(model.ms(0, 1, 103), 6)
    // its next token ends that step: a new step, with the 1,000 in it
    clock.advance(Math.max(0, length - 15))
    gates.observeGap(view.name, stream, length, clock.now())
    expect(gates.phase(view.name).inStepTokens).toBe(1_400)
    expect(gates.phase(view.name).residualMs).toBeGreaterThan(model.ms(1_000, 1, 100))
  })

  it('counts nothing in progress on an endpoint with nothing decoding or pending', () => {
    const { gates, clock, view } = setup()
    const stream = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
    gates.tokenFrom(view.name, stream, clock.now())
    expect(gates.phase(view.name).residualMs).toBe(0)
  })
})
