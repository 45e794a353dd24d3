/**
 * Where an endpoint's engine is in its step: a request sent now waits for the step in
 * progress to end, then is prefilled after the prompts the server already has. The gateway
 * sees each step end as the token it brings every stream there, so it knows when the step in
 * progress began, which prompts it had sent before then (the server took them into that
 * step), and how long that step has left; the estimator prices that time, not a mean step.
 */
import { describe, expect, it } from 'vitest'
import { EndpointGates, type Residual } from '../../../src/admission/gate.js'
import { PrefillLedger } from '../../../src/admission/prefill-ledger.js'
import { TtftEstimator } from '../../../src/admission/ttft-estimator.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { FakePool } from './fake-pool.js'

const hints = { stepMs: 15, prefillTokensPerS: 20_000 }

function setup() {
  const config = configSchema.parse({ admission: { max_prefill_tokens_per_endpoint: 8_000 } })
  const clock = new ManualClock(1_000)
  const gates = new EndpointGates(config.classes, config.admission, clock, {
    value: 20_000,
    source: 'default_prior',
  })
  const estimator = new TtftEstimator(hints, clock)
  const residual: Residual = (s, tokens, age) => estimator.residualMs(s, tokens, age)
  const view = new FakePool().views()[0]!
  return { gates, estimator, residual, clock, view }
}

describe('PrefillLedger.sentBy', () => {
  it('counts the pending prompts sent at or before a time, until each is uncounted', () => {
    const l = new PrefillLedger()
    const a = l.add('e0', 1000, 50, undefined, 10)
    l.add('e0', 500, 80, undefined, 20)
    expect([l.sentBy('e0', 9), l.sentBy('e0', 10), l.sentBy('e0', 20), l.sentBy('e1', 20)]).toEqual([
      0, 1000, 1500, 0,
    ])
    a()
    expect(l.sentBy('e0', 20)).toBe(500)
  })
})

describe('TtftEstimator.residualMs', () => {
  it('is the step and its prompts at the fitted prefill cost, less the time since it began; 0 once past', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    // β 0.05 ms/token: a 20 ms step that took 400 prompt tokens lasts 40 ms
    expect(e.residualMs(20, 400, 0)).toBeCloseTo(40, 6)
    expect(e.residualMs(20, 400, 25)).toBeCloseTo(15, 6)
    expect(e.residualMs(20, 400, 60)).toBe(0)
    // unmeasured step: the prior (15 ms)
    expect(e.residualMs(undefined, 0, 5)).toBeCloseTo(10, 6)
  })

  it('adds to the server time a request is predicted, ms for ms at the prior', () => {
    const e = new TtftEstimator(hints, new ManualClock())
    const at = (residualMs: number) =>
      e.predict({ endpoints: 1, pendingTokens: 0, foreignTokens: 0, stepMs: 20, residualMs }, undefined, 500)
    expect(at(30).serverMs - at(0).serverMs).toBeCloseTo(30, 6)
    // a queued request meets what queued requests met at dispatch, not the step in progress now
    e.onDispatch(500, 0, true, 40)
    const queued = (residualMs: number) =>
      e.predict({ endpoints: 1, pendingTokens: 0, foreignTokens: 0, stepMs: 20, residualMs }, 0, 500).serverMs
    expect(queued(0)).toBe(queued(30))
    expect(queued(0) - at(0).serverMs).toBeCloseTo(0.05 * 40, 6)
  })
})

describe('EndpointGates.phase', () => {
  it('knows no step in progress before the first token from an endpoint', () => {
    const { gates, residual, view } = setup()
    gates.dispatched(view.name, 2_000, 100)
    expect(gates.phase(view.name, 20, residual)).toEqual({ inStepTokens: 0, residualMs: 0 })
  })

  it('takes the prompts sent before the step began as in it, and prices its time left', () => {
    const { gates, residual, clock, view } = setup()
    gates.dispatched(view.name, 400, 100) // sent at 1000
    clock.advance(5)
    gates.stepEnded(view.name, clock.now()) // a step ended at 1005: the next began, with the 400
    clock.advance(5)
    gates.dispatched(view.name, 1_000, 100) // sent at 1010: waits for the next step
    clock.advance(10)
    // at 1020: the step began 15 ms ago; 20 ms + 400 x 0.05 = 40 ms long: 25 ms left
    const phase = gates.phase(view.name, 20, residual)
    expect(phase.inStepTokens).toBe(400)
    expect(phase.residualMs).toBeCloseTo(25, 6)
    // the estimator's view: the prompts after the step (1,000) pending, and the time left at
    // the endpoint's live step time (none measured yet: the 15 ms prior): 15 + 20 - 15
    const v = gates.serverView([view], 512, residual)
    expect(v.pendingTokens).toBe(1_000)
    expect(v.residualMs).toBeCloseTo(20, 6)
    // a token gap is a step end too: a new step, with both prompts in it
    gates.observeGap(view.name, 20, clock.now())
    expect(gates.phase(view.name, 20, residual)).toEqual({ inStepTokens: 1_400, residualMs: 90 })
  })
})
