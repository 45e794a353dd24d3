/**
 * The default endpoint scorer: lowest predicted wait, in "requests ahead of this one".
 *
 *   score = W'                                  requests queued ahead
 *         + R' / S                              a full batch (S = max_num_seqs, default 256)
 *                                               costs one queued request: it slows every step
 *         + kvTerm(k)                           KV headroom, k = KV usage after this request
 *         + T / TOKEN_SCALE                     in-flight tokens, only when KV is unknown
 *
 *   k = U' + tokens / C when the capacity C is known, else U' (see load-correction.ts)
 *   kvTerm(k) = k / 2 + (k > 1/2 ? (k - 1/2) / max(0.02, 1 - k) : 0)
 *     (0 when empty, 0.25 at half, 1.9 at 0.8, 4.45 at 0.9, 25.5 at 1: a nearly full cache
 *      means preemption or a wait for blocks, which dominates everything else)
 *
 * It is a heuristic ranking, not a latency: admission's TTFT estimator can replace it
 * through the EndpointScorer interface.
 */
import type { EndpointScorer, EndpointView } from './types.js'

export const DEFAULT_BATCH_SLOTS = 256
/** Tokens in flight that weigh as much as one queued request when KV usage is unknown. */
export const TOKEN_SCALE = 32_768

export function kvTerm(k: number): number {
  const x = Math.min(1, Math.max(0, k))
  return x / 2 + (x > 0.5 ? (x - 0.5) / Math.max(0.02, 1 - x) : 0)
}

export const leastWaitScorer: EndpointScorer = {
  name: 'least-wait',
  score(view: EndpointView, tokens: number): number {
    const e = view.effective
    const slots = view.capacity.maxNumSeqs ?? DEFAULT_BATCH_SLOTS
    let score = e.waiting + e.running / slots
    if (e.kvUsage !== undefined) {
      const cap = e.kvCapacityTokens
      const k = cap !== undefined && cap > 0 ? e.kvUsage + Math.max(0, tokens) / cap : e.kvUsage
      score += kvTerm(k)
    } else {
      score += e.inflightTokens / TOKEN_SCALE
    }
    return Number.isFinite(score) && score >= 0 ? score : Number.POSITIVE_INFINITY
  },
}
