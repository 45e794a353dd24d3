import { SimEngine } from '../src/sim/engine.js'
import type { SimProfile } from '../src/sim/profile-schema.js'
import { type FinishReason, SimRequest, type TokenSink } from '../src/sim/sim-request.js'

export interface ClosedLoopSpec {
  readonly concurrency: number
  readonly promptTokens: number
  readonly outputTokens: number
  /** Simulated time to run, and the leading part whose requests are not counted (ms). */
  readonly durationMs: number
  readonly warmupMs: number
  /** Requests arriving in [warmupMs, measureUntilMs) are measured (default: until durationMs). */
  readonly measureUntilMs?: number
  /** Client i sends its first request at i·staggerMs (0 = all at once). */
  readonly staggerMs?: number
}

export interface ClosedLoopResult {
  readonly completed: number
  readonly ttftMeanMs: number
  readonly tpotMeanMs: number
  readonly outputTokensPerSec: number
}

/**
 * What the step model predicts for a closed-loop benchmark (each of `concurrency` clients sends its
 * next request when the previous one ends, ignore_eos), run on virtual time: no HTTP, no timers.
 * The bench prints it beside what the served simulator measures.
 */
export function runClosedLoopVirtual(profile: SimProfile, spec: ClosedLoopSpec): ClosedLoopResult {
  const engine = new SimEngine({ profile })
  let now = 0
  let n = 0
  let completed = 0
  let ttftSum = 0
  let tpotSum = 0
  let tokensInWindow = 0
  const submit = (arrival: number): void => {
    const req = new SimRequest({
      id: `v${n++}`,
      promptTokens: spec.promptTokens,
      targetOutput: spec.outputTokens,
      finishReason: 'length',
      blockHashes: [],
      sink,
      arrival,
    })
    engine.submit(req)
  }
  const sink: TokenSink = {
    onToken(req: SimRequest, finish: FinishReason | null): void {
      if (now >= spec.warmupMs) tokensInWindow++
      if (finish === null) return
      if (req.arrival >= spec.warmupMs && req.arrival < (spec.measureUntilMs ?? spec.durationMs)) {
        completed++
        ttftSum += req.firstToken - req.arrival
        tpotSum += req.numOutput > 1 ? (req.lastToken - req.firstToken) / (req.numOutput - 1) : 0
      }
      if (now < spec.durationMs) submit(now)
    },
  }
  const starts = Array.from({ length: spec.concurrency }, (_, i) => i * (spec.staggerMs ?? 0))
  for (;;) {
    while (starts.length > 0 && starts[0]! <= now) submit(starts.shift() as number)
    const d = engine.beginStep(now)
    if (d === null) {
      if (starts.length === 0) break
      now = starts[0]!
      continue
    }
    now += d
    engine.finishStep(now)
  }
  const windowSec = (Math.min(now, spec.durationMs) - spec.warmupMs) / 1000
  return {
    completed,
    ttftMeanMs: completed > 0 ? ttftSum / completed : Number.NaN,
    tpotMeanMs: completed > 0 ? tpotSum / completed : Number.NaN,
    outputTokensPerSec: windowSec > 0 ? tokensInWindow / windowSec : Number.NaN,
  }
}
