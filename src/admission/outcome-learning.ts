/**
 * What a dispatched request teaches. At its first token (learnFromFirstToken): the
 * estimator's server part, the estimator's judgement of its prediction and its class's TTFT
 * margin: what the first token says is known then, and a cold start on wrong priors must
 * not wait for whole streams to end before its predictions follow the server. At its end
 * (learnFromOutcome): the mean prefill work of a request (its prompt as the server counted
 * it, less the share expected in the prefix cache) and its endpoint's prefill rate
 * (pool-facts.ts), which need the server's own count of the prompt (its usage), and its
 * class's TPOT margin (decode-guard.ts) from a stream not judged on its first gaps (waiting.ts).
 */
import { measure } from '../telemetry/verdict.js'
import type { EndpointGates } from './gate.js'
import { observePrefill } from './pool-facts.js'
import type { PoolPredictor } from './pool-prediction.js'
import type { TtftEstimator } from './ttft-estimator.js'
import type { TtftObjectives } from './ttft-objectives.js'
import type { Waiting } from './waiting.js'

export function learnFromFirstToken(
  w: Waiting,
  estimator: TtftEstimator,
  ttft: TtftObjectives,
  joinedTokens = 0,
): void {
  const t = w.ticket
  if (t.firstTokenAt === undefined || t.dispatchedAt === undefined || w.serverFeatures === undefined) return
  // Every class teaches the server part (the engine does not know classes), so it keeps
  // learning while a class is refused (the queue wait is the forecast's, not learned).
  // Its features as they turned out: the prompts sent after it that shared its step, not
  // those expected at its dispatch.
  const queued = w.prediction.queueFeatures !== undefined
  const features = [...w.serverFeatures]
  features[1] = (features[1] ?? 0) + joinedTokens - w.expectedJoined
  estimator.observeServer(features, t.firstTokenAt - t.dispatchedAt)
  estimator.onJoined(joinedTokens, queued)
  const ttftMs = t.firstTokenAt - t.arrivedAt
  if (ttft.learnsFrom(w.className)) estimator.judge(w.prediction, ttftMs)
  ttft.observe(w.className, t.slo?.ttft_ms, w.prediction.totalMs, ttftMs)
}

export function learnFromOutcome(w: Waiting, predictor: PoolPredictor, gates: EndpointGates): void {
  const t = w.ticket
  // a stream not judged early (waiting.ts): its mean time per output token, as the client
  // and the SLO verdict count it, teaches its class's TPOT margin
  const tpotS = w.tpotJudged ? undefined : measure(t).tpotS
  w.tpotJudged = true
  if (tpotS !== undefined) gates.judgeTpot(w.className, tpotS * 1000, true)
  // the mean prefill work of a request (what one waiting at a server costs): its prompt,
  // less the share expected in the prefix cache
  const share = w.computeTokens === undefined || w.promptTokens <= 0 ? 1 : w.computeTokens / w.promptTokens
  const prompt = (t.usage?.promptTokens ?? w.promptTokens) * share
  predictor.learnPrompt(prompt)
  // the prompt tokens its prefill met there: its endpoint's prefill rate (pool-facts.ts)
  if (t.firstTokenAt !== undefined && t.dispatchedAt !== undefined && w.serverFeatures !== undefined)
    observePrefill(w, prompt, t.firstTokenAt - t.dispatchedAt)
}
