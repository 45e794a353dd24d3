/**
 * The engine's step time learned from the steps the gateway sees (step-timeline.ts): fed
 * the steps a vLLM-like engine runs (base + prefill + per sequence + context, the
 * simulator's own step model for the 8B H100 profile), the fit finds the step time of
 * steps it has not seen; the step in progress ends when its model says; a stream's first
 * token makes it a decoder of the step that just began.
 */
import { describe, expect, it } from 'vitest'
import { EngineTimeline, StepModel } from '../../../src/admission/step-timeline.js'
import { Rng } from '../../../src/sim/rng.js'
import { stepTimeMs } from '../../../src/sim/step-model.js'

const h100 = { baseMs: 6.5, perPrefillTokenMs: 0.025, perDecodeSeqMs: 0.006, perContextTokenMs: 0.00006 }

describe('StepModel', () => {
  it('learns an engine step time within 5% of the engine, from priors 2x off', () => {
    const m = new StepModel({ stepMs: 15, prefillTokensPerS: 20_000 })
    const rng = new Rng(7)
    for (let i = 0; i < 600; i++) {
      const prefill = rng.next() < 0.3 ? Math.floor(rng.next() * 8000) : 0
      const decodes = 10 + Math.floor(rng.next() * 120)
      const context = decodes * (300 + Math.floor(rng.next() * 2000))
      const ms = stepTimeMs(h100, { prefillTokens: prefill, decodeSeqs: decodes, contextTokens: context })
      m.observe([1, prefill, decodes, context / 1000], ms * (1 + (rng.next() - 0.5) * 0.05))
    }
    for (const [prefill, decodes, context] of [
      [0, 64, 64 * 1500],
      [4000, 64, 64 * 1500],
      [8000, 120, 120 * 800],
      [500, 20, 20 * 3000],
    ] as const) {
      const truth = stepTimeMs(h100, { prefillTokens: prefill, decodeSeqs: decodes, contextTokens: context })
      expect(Math.abs(m.ms(prefill, decodes, context) - truth) / truth).toBeLessThan(0.05)
    }
  })
})

describe('EngineTimeline', () => {
  it('says when the step in progress ends, and 0 once it is due or the engine idles', () => {
    const tl = new EngineTimeline({ stepMs: 10, prefillTokensPerS: 40_000 })
    tl.stepEnded(1000, 4000, Number.POSITIVE_INFINITY) // a step prefilling 4,000 tokens: ~10 + 100 ms
    const len = tl.stepMs()
    expect(len).toBeGreaterThan(100)
    expect(tl.residualMs(1000 + 30, false)).toBeCloseTo(len - 30, 5)
    expect(tl.residualMs(1000 + len + 5, false)).toBe(0)
    expect(tl.residualMs(1000 + 30, true)).toBe(0)
  })

  it('counts a stream whose first token began the step as decoding in it, its prompt no longer prefilled', () => {
    const tl = new EngineTimeline({ stepMs: 10, prefillTokensPerS: 40_000 })
    tl.stepEnded(1000, 2000, Number.POSITIVE_INFINITY)
    const withPrompt = tl.stepMs()
    tl.firstToken(2000, 2000, true)
    expect(tl.decoding).toBe(1)
    expect(tl.contextTokens).toBe(2001)
    expect(tl.stepMs()).toBeLessThan(withPrompt)
    // each step a decoding stream gets a token of context more
    tl.stepEnded(1012, 0, Number.POSITIVE_INFINITY)
    expect(tl.contextTokens).toBe(2002)
    tl.decoderLeft(2002)
    expect(tl.decoding).toBe(0)
    expect(tl.idle()).toBe(true)
  })

  it('learns from the steps it sees end, not from a gap in which the engine idled', () => {
    const tl = new EngineTimeline({ stepMs: 10, prefillTokensPerS: 40_000 })
    tl.firstToken(1000, 1000, false)
    let t = 0
    for (let i = 0; i < 200; i++) {
      tl.stepEnded(t, 0, Number.POSITIVE_INFINITY)
      t += 20
    }
    // a long silence (no stream there), then steps again: the silence is not a step
    tl.stepEnded(t + 5000, 0, Number.POSITIVE_INFINITY)
    expect(tl.nextStepMs(0)).toBeGreaterThan(17)
    expect(tl.nextStepMs(0)).toBeLessThan(23)
  })
})
