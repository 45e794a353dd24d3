import { describe, expect, it } from 'vitest'
import type { Outcome } from '../admission-client.js'
import { rawVerdict } from '../admission-metrics.js'
import type { Window } from '../admission-run.js'

const slo = { ttftMs: 500, tpotMs: 50 }
// model ms at scale 2: the window is 1,000-3,000 model ms, judged until 3,500 (7,000 wall ms)
const w: Window = { fromMs: 1000, toMs: 3000, spanMs: 2000, judgeUntilMs: 3500 }

function outcome(atMs: number, status: number, tokenMs: number[], done = true): Outcome {
  const sentMs = atMs * 2
  return {
    arrival: { seq: 1, atMs, cls: 'interactive', promptTokens: 100, outputTokens: tokenMs.length },
    dueMs: sentMs,
    sentMs,
    status,
    tokenMs: tokenMs.map((t) => sentMs + t),
    cut: !done,
    done,
  }
}

describe('rawVerdict (the --raw line adds up to the report)', () => {
  it('says whether a request arrived in the measured window, by its schedule', () => {
    expect(rawVerdict(outcome(999, 200, [100, 180]), w, slo, 2).judged).toBe(false)
    expect(rawVerdict(outcome(1000, 200, [100, 180]), w, slo, 2).judged).toBe(true)
    expect(rawVerdict(outcome(3000, 200, [100, 180]), w, slo, 2).judged).toBe(false)
  })

  it('judges an admitted request in model time: TTFT and TPOT against the objectives', () => {
    // wall 900 ms to the first token = 450 model ms; gaps of 80 wall = 40 model ms
    expect(rawVerdict(outcome(2000, 200, [900, 980, 1060]), w, slo, 2)).toEqual({ judged: true, good: true })
    // wall 1,100 ms = 550 model ms: over the TTFT objective
    expect(rawVerdict(outcome(2000, 200, [1100, 1180]), w, slo, 2).good).toBe(false)
    // gaps of 120 wall = 60 model ms: over the TPOT objective
    expect(rawVerdict(outcome(2000, 200, [900, 1020, 1140]), w, slo, 2).good).toBe(false)
  })

  it('judges at the horizon: no first token by then is a miss, and a refusal has no verdict', () => {
    // sent at 5,800 wall ms, the horizon at 7,000: its first token at 7,300 came too late
    expect(rawVerdict(outcome(2900, 200, [1500], false), w, slo, 2)).toEqual({ judged: true, good: false })
    expect(rawVerdict(outcome(2000, 503, []), w, slo, 2)).toEqual({ judged: true })
  })
})
