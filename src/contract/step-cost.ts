/**
 * The arithmetic of an engine step that doctor and the contract use: how long a decode step
 * takes at a batch size, how long an idle server takes to prefill a prompt, and the largest
 * batch whose step fits a TPOT objective. From the simulator's step model (a profile:
 * base + per prefill token + per decode sequence + per context token, docs/simulator.md), or,
 * without one, from the admission estimator's priors (a flat step, a prefill rate).
 */
import type { StepTimeModel } from '../sim/profile-schema.js'

export interface StepCostModel {
  /** Where the numbers come from: a profile's name, or `admission.estimator priors`. */
  readonly source: string
  /** One decode step of `batch` sequences, each holding `contextTokens` on average, ms. */
  decodeStepMs(batch: number, contextTokens: number): number
  /** Time to first token of a `promptTokens` prompt on an idle server, ms. */
  idlePrefillMs(promptTokens: number): number
  /** True when the step grows with the batch (a profile); priors know only a flat step. */
  readonly batchAware: boolean
}

/** The step model of a simulator profile; `maxBatchedTokens` chunks a long prefill. */
export function profileCost(name: string, m: StepTimeModel, maxBatchedTokens: number): StepCostModel {
  return {
    source: `profile ${name}`,
    batchAware: true,
    decodeStepMs: (batch, ctx) =>
      m.baseMs + m.perDecodeSeqMs * batch + m.perContextTokenMs * batch * Math.max(0, ctx),
    idlePrefillMs(prompt) {
      // chunked prefill: one step per max_num_batched_tokens, each reading the context so far
      let done = 0
      let ms = 0
      const chunk = Math.max(1, maxBatchedTokens)
      while (done < prompt) {
        const n = Math.min(chunk, prompt - done)
        done += n
        ms += m.baseMs + m.perPrefillTokenMs * n + m.perContextTokenMs * done
      }
      return prompt <= 0 ? m.baseMs : ms
    },
  }
}

/** The estimator's priors: a step of `stepMs` whatever the batch, prefill at `tokensPerS`. */
export function priorsCost(stepMs: number, tokensPerS: number): StepCostModel {
  return {
    source: 'admission.estimator priors',
    batchAware: false,
    decodeStepMs: () => stepMs,
    idlePrefillMs: (prompt) => stepMs + (1000 * Math.max(0, prompt)) / tokensPerS,
  }
}

/**
 * The largest batch (1..maxBatch) whose decode step stays within `stepBudgetMs`; 0 when even
 * one sequence's step is over it. Binary search: the step grows with the batch.
 */
export function largestBatchWithin(
  cost: StepCostModel,
  stepBudgetMs: number,
  contextTokens: number,
  maxBatch: number,
): number {
  if (cost.decodeStepMs(1, contextTokens) > stepBudgetMs) return 0
  let lo = 1
  let hi = Math.max(1, Math.floor(maxBatch))
  if (cost.decodeStepMs(hi, contextTokens) <= stepBudgetMs) return hi
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (cost.decodeStepMs(mid, contextTokens) <= stepBudgetMs) lo = mid
    else hi = mid
  }
  return lo
}
