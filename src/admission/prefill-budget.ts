/**
 * The prefill budget of one endpoint: at most how many prompt tokens the gateway keeps sent
 * there and awaiting their first token (always at least one request: see prefill-ledger.ts).
 *
 * It should fit the engine. Too small, and prompts reach the server one at a time: each
 * waits for the one before it to return its first token, the engine's step budget goes
 * unused and about every other step prefills nothing. Too large, and the queue forms at
 * the server, in its FCFS order, where priorities no longer hold and a request dispatched
 * behind it waits for all of it. So: the engine's step budget (the most prompt tokens one
 * step computes, vLLM's max_num_batched_tokens), and at most what the engine prefills in
 * half the tightest TTFT objective of the classes refused on it, so that a request
 * dispatched behind a full budget can still meet its objective. Both come from the
 * endpoint's engine facts (src/backends/engine-facts.ts); `admission.max_prefill_tokens_per_endpoint`
 * overrides the whole rule.
 */
import type { Fact, FactSource } from '../backends/engine-facts.js'

export interface BudgetFacts {
  stepTokens(): Fact
  prefillTokensPerS(): Fact
}

export interface PrefillBudget {
  readonly tokens: number
  /** Which rule bound it: the override, the engine's step, or the time within the objective. */
  readonly bound: 'config' | 'step_tokens' | 'ttft_objective'
  /** Where the binding fact came from. */
  readonly source: FactSource
}

/** Half the tightest TTFT objective: the prefill a request dispatched behind a full budget waits for, at most. */
export const OBJECTIVE_SHARE = 0.5

export function prefillBudget(facts: BudgetFacts, tightestTtftMs: number | undefined): PrefillBudget {
  const step = facts.stepTokens()
  if (tightestTtftMs === undefined) return { tokens: step.value, bound: 'step_tokens', source: step.source }
  const rate = facts.prefillTokensPerS()
  const inTime = Math.floor((rate.value / 1000) * tightestTtftMs * OBJECTIVE_SHARE)
  if (inTime < step.value)
    return { tokens: Math.max(1, inTime), bound: 'ttft_objective', source: rate.source }
  return { tokens: step.value, bound: 'step_tokens', source: step.source }
}
