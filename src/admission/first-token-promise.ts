/**
 * First-token promises. An engine takes every prompt waiting for it into its next step (up
 * to its step budget), so a prompt sent after a request and before that request's step began
 * lengthens that step, and its first token comes later. Each dispatched request of a class
 * refused on its predicted TTFT keeps what its client was told (its arrival plus its
 * predicted TTFT, with slack: promiseBy) in the prefill ledger; the gate holds a prompt that
 * would break such a promise (breaksPromise) until that step begins (gate.ts).
 */
import type { PrefillLedger } from './prefill-ledger.js'
import { type EngineTimeline, MISSED_STEP_MS } from './step-timeline.js'

/**
 * A first token is promised by its arrival plus its predicted TTFT times 1 + this: a prompt
 * that would push an earlier one's past that waits for the next engine step.
 */
const PROMISE_SLACK = 0.3

/** By when a request placed at `now`, predicted at `predictedMs`, is promised its first token. */
export function promiseBy(now: number, predictedMs: number): number {
  return now + predictedMs * (1 + PROMISE_SLACK)
}

/**
 * True when `tokens` more of prompt sent to `endpoint` at `now` would break a first-token
 * promise that holds without them: the first tokens of the prompts sent since the step in
 * progress began (of classes of `priority` or above, lower running first) come when the
 * next step ends, and its length is the step model's with them. Where that would take one
 * past its promise, the prompt waits for the next step to begin (the dispatcher runs then),
 * and its own prediction says so (the forecast finds the gate closed until that step's end).
 * Only where a step is known in progress (streams decode there): an idle engine begins a
 * step with the first prompt it gets. A promise already missed holds nothing.
 */
export function breaksPromise(
  tl: EngineTimeline,
  ledger: PrefillLedger,
  endpoint: string,
  tokens: number,
  priority: number,
  now: number,
): boolean {
  const start = tl.stepStart()
  if (start === undefined || tl.decoding === 0) return false
  const by = ledger.earliestPromise(endpoint, start - MISSED_STEP_MS, priority)
  if (by === Number.POSITIVE_INFINITY) return false
  const phase = tl.phase(now)
  const next = Math.max(0, ledger.at(endpoint) - phase.inStepTokens)
  const begins = now + phase.residualMs
  return begins + tl.nextStepMs(next + tokens) > by && begins + tl.nextStepMs(next) <= by
}
