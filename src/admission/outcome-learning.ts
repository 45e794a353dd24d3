/**
 * What a dispatched request teaches when it ends: the mean prefill work of a request (its
 * prompt as the server counted it, less the share expected in the prefix cache), and, when
 * it streamed, the estimator's server part, its endpoint's prefill rate (pool-facts.ts),
 * the estimator's judgement of its prediction and its class's TTFT margin.
 */
import { observePrefill } from './pool-facts.js'
import type { PoolPredictor } from './pool-prediction.js'
import type { TtftEstimator } from './ttft-estimator.js'
import type { TtftObjectives } from './ttft-objectives.js'
import type { Waiting } from './waiting.js'

export function learnFromOutcome(
  w: Waiting,
  estimator: TtftEstimator,
  ttft: TtftObjectives,
  predictor: PoolPredictor,
): void {
  const t = w.ticket
  // the mean prefill work of a request (what one waiting at a server costs): its prompt,
  // less the share expected in the prefix cache
  const share = w.computeTokens === undefined || w.promptTokens <= 0 ? 1 : w.computeTokens / w.promptTokens
  const prompt = (t.usage?.promptTokens ?? w.promptTokens) * share
  predictor.learnPrompt(prompt)
  // Every class teaches the server part (the engine does not know classes), so it keeps
  // learning while a class is refused; only the queue part is per-class (PoolAdmission.start).
  if (t.firstTokenAt !== undefined && t.dispatchedAt !== undefined && w.serverFeatures !== undefined) {
    estimator.observeServer(w.serverFeatures, t.firstTokenAt - t.dispatchedAt)
    // the prompt tokens its prefill met there: its endpoint's prefill rate (pool-facts.ts)
    observePrefill(w, prompt, t.firstTokenAt - t.dispatchedAt)
    const ttftMs = t.firstTokenAt - t.arrivedAt
    if (ttft.learnsFrom(w.className)) estimator.judge(w.prediction, ttftMs)
    ttft.observe(w.className, t.slo?.ttft_ms, w.prediction.totalMs, ttftMs)
  }
}
