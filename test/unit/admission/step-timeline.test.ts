/**
 * The engine's step time learned from the steps the gateway sees (step-timeline.ts): fed
 * the steps a vLLM-like engine runs (base + prefill + per sequence + context, the
 * simulator's own step model for the 8B H100 profile), the fit finds the step time of
 * steps it has not seen; the step in progress ends when its model says; a stream's first
 * token makes it a decoder of the step that just began.
 */
import { describe, expect, it } from 'vitest'
import { PrefillLedger } from '../../../src/admission/prefill-ledger.js'
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

/** `n` streams whose first tokens came from `tl` at `at`: decoding there. */
function decodingStreams(tl: EngineTimeline, n: number, at: number, promptTokens: number) {
  const streams = Array.from({ length: n }, () => ({ stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }))
  for (const s of streams) {
    tl.tokenFrom(s, at)
    tl.firstToken(at, promptTokens)
  }
  return streams
}

describe('EngineTimeline', () => {
  const priors = { stepMs: 10, prefillTokensPerS: 40_000 }

  it('says when the step in progress ends, and 0 once it is due or the engine idles', () => {
    const ledger = new PrefillLedger()
    const tl = new EngineTimeline(priors, ledger, 'e')
    const stream = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
    tl.tokenFrom(stream, 900)
    tl.firstToken(900, 100) // a stream decodes there
    ledger.add('e', 4000, 0, undefined, 950)
    tl.tokenFrom(stream, 1000) // its next token: a step began at 1,000 with the 4,000 sent before
    const len = tl.stepMs()
    expect(len).toBeGreaterThan(100) // ~10 + 4,000 x 0.025 ms
    expect(tl.phase(1000 + 30).inStepTokens).toBe(4000)
    expect(tl.phase(1000 + 30).residualMs).toBeCloseTo(len - 30, 6)
    expect(tl.phase(1000 + len + 5).residualMs).toBe(0)
    const idle = new EngineTimeline(priors, new PrefillLedger(), 'e')
    idle.tokenFrom({ stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }, 1000)
    expect(idle.phase(1005).residualMs).toBe(0) // nothing decoding or pending: nothing in progress
  })

  it('tells one step from the next by the streams, however spread their tokens arrive', () => {
    const tl = new EngineTimeline(priors, new PrefillLedger(), 'e')
    const streams = [
      { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY },
      { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY },
      { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY },
    ]
    for (const s of streams) {
      tl.tokenFrom(s, 1000)
      tl.firstToken(1000, 100)
    }
    // the next step's tokens over 4 ms: one step, begun at the first
    tl.tokenFrom(streams[1]!, 1020)
    tl.tokenFrom(streams[0]!, 1022)
    tl.tokenFrom(streams[2]!, 1024)
    expect(tl.stepBegan(1024)).toBe(1000)
    expect(tl.stepBegan(1040)).toBe(1020)
  })

  it('owes, while a step end is read, a gap of the ended step for each stream whose token it has not read', () => {
    const tl = new EngineTimeline(priors, new PrefillLedger(), 'e')
    const streams = decodingStreams(tl, 4, 1000, 100)
    expect(tl.unreadGaps(1000)).toBeUndefined() // first tokens: no gap owed
    // the step that began at 1,000 ends at 1,200; its tokens are read over 3 ms
    tl.tokenFrom(streams[2]!, 1200)
    expect(tl.unreadGaps(1200)).toEqual({ gapMs: 200, count: 3 })
    tl.tokenFrom(streams[0]!, 1201)
    expect(tl.unreadGaps(1201)).toEqual({ gapMs: 200, count: 2 })
    // a stream that begins to decode in the burst owes nothing
    const late = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
    tl.tokenFrom(late, 1202)
    tl.firstToken(1202, 100)
    expect(tl.unreadGaps(1202)).toEqual({ gapMs: 200, count: 2 })
    tl.tokenFrom(streams[1]!, 1203)
    expect(tl.unreadGaps(1203)?.count).toBe(1)
    // past the burst (half the step in progress), a token not read is not owed any more
    expect(tl.unreadGaps(1200 + tl.stepMs())).toBeUndefined()
    tl.tokenFrom(streams[3]!, 1203)
    expect(tl.unreadGaps(1203)).toBeUndefined()
  })

  it('learns nothing from a step whose tokens it read two at a time (it fell behind)', () => {
    const tl = new EngineTimeline(priors, new PrefillLedger(), 'e')
    const streams = decodingStreams(tl, 20, 0, 1000)
    let t = 0
    const step = () => {
      t += 20
      for (const [i, s] of streams.entries()) tl.tokenFrom(s, t + i * 0.05)
    }
    for (let i = 0; i < 100; i++) step()
    const before = tl.nextStepMs(0)
    expect(before).toBeGreaterThan(18)
    // the gateway stalls for a step: each stream's two tokens are read back to back
    t += 40
    streams.forEach((s, i) => {
      tl.tokenFrom(s, t + i * 0.1)
      tl.tokenFrom(s, t + i * 0.1 + 0.02)
    })
    for (let i = 0; i < 5; i++) step()
    // no step of 0.02 ms was learned: the model still says ~20 ms
    expect(tl.nextStepMs(0)).toBeGreaterThan(18)
  })

  it('counts a stream whose first token began the step as decoding in it, its prompt no longer prefilled', () => {
    const ledger = new PrefillLedger()
    const tl = new EngineTimeline(priors, ledger, 'e')
    const done = ledger.add('e', 2000, 0, undefined, 990)
    tl.tokenFrom({ stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }, 1000) // a step began at 1,000, prefilling the 2,000
    const withPrompt = tl.stepMs()
    done() // its first token ...
    tl.firstToken(1000, 2000) // ... came with those that began the step
    expect(tl.decoding).toBe(1)
    expect(tl.contextTokens).toBe(2001)
    expect(tl.stepMs()).toBeLessThan(withPrompt)
    tl.decoderLeft(2001)
    expect(tl.decoding).toBe(0)
  })

  it('takes the prompts still pending as the prefill of a step that a first token began', () => {
    // a cold engine: two prompts sent; the first one's first token ends the engine's first
    // step, the next step prefills the second. The gateway uncounts a prompt before it reads
    // its token (AdmittedLease.prefilled), so the step it begins never counted it.
    const ledger = new PrefillLedger()
    const tl = new EngineTimeline(priors, ledger, 'e')
    const a = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
    const doneA = ledger.add('e', 777, 0, undefined, 48)
    ledger.add('e', 1053, 0, undefined, 99)
    doneA()
    tl.tokenFrom(a, 124)
    tl.firstToken(124, 777)
    // the step in progress prefills the 1,053 and decodes the first stream
    expect(tl.stepMs()).toBeCloseTo(tl.model.ms(1053, 1, 778), 6)
    expect(tl.phase(130).inStepTokens).toBe(1053)
  })

  it('learns from the steps it sees end, not from a gap in which the engine idled', () => {
    const tl = new EngineTimeline(priors, new PrefillLedger(), 'e')
    const stream = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
    tl.tokenFrom(stream, 0)
    tl.firstToken(0, 1000)
    let t = 0
    for (let i = 0; i < 200; i++) {
      t += 20
      tl.tokenFrom(stream, t)
    }
    // a long silence, then steps again: the silence is not a step
    tl.tokenFrom(stream, t + 5000)
    expect(tl.nextStepMs(0)).toBeGreaterThan(17)
    expect(tl.nextStepMs(0)).toBeLessThan(23)
  })

  it('re-seeds from the engine facts an engine too slow for its priors, whose every step it took for an outlier', () => {
    const tl = new EngineTimeline(priors, new PrefillLedger(), 'e')
    const stream = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
    tl.tokenFrom(stream, 0)
    tl.firstToken(0, 50)
    let t = 0
    const steps = (n: number) => {
      for (let i = 0; i < n; i++) {
        t += 100 // 100 ms a step: over 4x the 10 ms prior, so not one step by the model
        tl.tokenFrom(stream, t)
      }
    }
    steps(50)
    expect(tl.state()).toMatchObject({ stepModel: { steps: 0 } })
    expect(tl.nextStepMs(0)).toBeLessThan(15)
    // the endpoint's facts measured its step: the model starts again from them, and learns
    tl.adoptPriors(95, 1_000)
    steps(50)
    expect(tl.nextStepMs(0)).toBeGreaterThan(95)
    expect(tl.nextStepMs(0)).toBeLessThan(105)
    // once it has learned steps of its own, new priors do not reset it
    tl.adoptPriors(20, 40_000)
    expect(tl.nextStepMs(0)).toBeGreaterThan(95)
  })
})
