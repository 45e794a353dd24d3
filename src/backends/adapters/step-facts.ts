/**
 * What a vLLM V1 /metrics says about the engine's speed and its step, for the engine facts
 * (engine-facts.ts), read from its histograms (their `_sum`, `_count` and `_bucket` series,
 * summed over engine cores):
 *
 * - prefill: `vllm:request_prefill_time_seconds` (per finished request, scheduled to first
 *   token) against `vllm:request_prompt_tokens` of the same requests: their sums and count;
 * - the largest step: the upper edge of the highest non-empty `vllm:iteration_tokens_total`
 *   bucket that holds at least two steps (one odd step is not a budget). An engine never
 *   steps more tokens than its budget (max_num_batched_tokens), so this is a lower bound of
 *   the budget: the edge of the bucket the full steps fell in;
 * - the step ceiling: the upper edge of the highest finite bucket with any step in it, when
 *   no step fell past the last finite bucket: no step computed more (engine-facts.ts reads
 *   a budget under the engine's default from it).
 */
import type { PromText } from '../prom-text.js'
import { sumOf } from './select.js'

const PREFILL = 'vllm:request_prefill_time_seconds'
const PROMPT = 'vllm:request_prompt_tokens'
const ITERATION = 'vllm:iteration_tokens_total'

/** The series step-facts reads, for an adapter's `metrics` list. */
export const STEP_FACT_METRICS = [
  `${PREFILL}_sum`,
  `${PREFILL}_count`,
  `${PROMPT}_sum`,
  `${PROMPT}_count`,
  `${ITERATION}_bucket`,
]

export interface StepFacts {
  prefillSecondsSum: number | undefined
  prefillCount: number | undefined
  promptTokensSum: number | undefined
  largestStepTokens: number | undefined
  stepCeilingTokens: number | undefined
}

export function readStepFacts(t: PromText): StepFacts {
  const prefillCount = sumOf(t, [`${PREFILL}_count`])
  const promptCount = sumOf(t, [`${PROMPT}_count`])
  // the two histograms must describe the same requests
  const same = prefillCount !== undefined && promptCount !== undefined && prefillCount === promptCount
  return {
    prefillSecondsSum: same ? sumOf(t, [`${PREFILL}_sum`]) : undefined,
    prefillCount: same ? prefillCount : undefined,
    promptTokensSum: same ? sumOf(t, [`${PROMPT}_sum`]) : undefined,
    largestStepTokens: largestBucket(t, `${ITERATION}_bucket`),
    stepCeilingTokens: ceilingBucket(t, `${ITERATION}_bucket`),
  }
}

/** The upper edge of the highest finite non-empty bucket; undefined when one fell past it (+Inf) or none. */
function ceilingBucket(t: PromText, name: string): number | undefined {
  const cumulative = new Map<number, number>()
  for (const s of t.samples.get(name) ?? []) {
    const le = s.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.labels.le)
    if (Number.isNaN(le) || !Number.isFinite(s.value)) continue
    cumulative.set(le, (cumulative.get(le) ?? 0) + s.value)
  }
  const edges = [...cumulative.keys()].sort((a, b) => a - b)
  let below = 0
  let top: number | undefined
  for (const le of edges) {
    const c = cumulative.get(le) ?? 0
    if (c > below) top = le
    below = c
  }
  return top === undefined || !Number.isFinite(top) ? undefined : top
}

/** The upper edge of the highest finite bucket with at least two observations in it. */
function largestBucket(t: PromText, name: string): number | undefined {
  const cumulative = new Map<number, number>()
  for (const s of t.samples.get(name) ?? []) {
    const le = Number(s.labels.le)
    if (!Number.isFinite(le) || !Number.isFinite(s.value)) continue
    cumulative.set(le, (cumulative.get(le) ?? 0) + s.value)
  }
  const edges = [...cumulative.keys()].sort((a, b) => a - b)
  let below = 0
  let best: number | undefined
  for (const le of edges) {
    const c = cumulative.get(le) ?? 0
    if (c - below >= 2) best = le
    below = c
  }
  return best
}
