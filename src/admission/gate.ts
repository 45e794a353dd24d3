/**
 * Dispatch gates: may an endpoint take one more request of a class now? And what do the
 * servers of a pool look like to the estimator?
 */
import type { EndpointView } from '../backends/types.js'
import type { ServerView } from './ttft-estimator.js'

export interface GateLimits {
  /** KV usage the class may dispatch up to (0..1). */
  readonly maxKvUsage: number
  /** Requests waiting in the endpoint's own queue, at most. */
  readonly maxWaiting: number
  /** Requests in flight to the endpoint, fewer than (unless the endpoint's max_num_seqs is known). */
  readonly maxInflight: number
}

/**
 * True when the endpoint has headroom for a request needing `kvTokens` of KV cache:
 * its queue is short, its batch is not full, and its KV usage stays under the class's
 * limit after this request. An endpoint with nothing in flight takes any request (a
 * request larger than the headroom would otherwise never run). `ownWaiting`: requests
 * the gateway sent that are not prefilled yet; they may show as waiting at the server
 * (their step has not begun) and are bounded by the prefill budget, not by this limit.
 */
export function hasHeadroom(e: EndpointView, limits: GateLimits, kvTokens: number, ownWaiting = 0): boolean {
  const eff = e.effective
  if (eff.inflightRequests === 0 && eff.waiting === 0) return true
  if (eff.waiting > limits.maxWaiting + ownWaiting) return false
  if (eff.inflightRequests >= (e.capacity.maxNumSeqs ?? limits.maxInflight)) return false
  return kvFits(e, limits, kvTokens)
}

/** True when the endpoint's KV usage stays under the class's limit after this request. */
export function kvFits(e: EndpointView, limits: GateLimits, kvTokens: number): boolean {
  const eff = e.effective
  if (eff.kvUsage === undefined) return true
  const cap = eff.kvCapacityTokens
  const after = cap !== undefined && cap > 0 ? eff.kvUsage + kvTokens / cap : eff.kvUsage
  return after <= limits.maxKvUsage
}

/**
 * Sums the usable endpoints' load into what the estimator reads: `stepMs(name)` is an
 * endpoint's live step time (undefined when unmeasured), `pendingTokens(name)` the prompt
 * tokens the gateway sent it that are not prefilled yet; the endpoint's own waiting queue
 * (by its last scrape, corrected) counts when it is longer (other clients, restarts).
 */
export function serverView(
  views: readonly EndpointView[],
  meanPromptTokens: number,
  stepMs: (endpoint: string) => number | undefined,
  pendingTokens: (endpoint: string) => number,
): ServerView {
  let pending = 0
  let steps = 0
  let measured = 0
  for (const v of views) {
    pending += Math.max(pendingTokens(v.name), v.effective.waiting * meanPromptTokens)
    const s = stepMs(v.name)
    if (s !== undefined) {
      steps += s
      measured++
    }
  }
  const n = Math.max(1, views.length)
  return {
    endpoints: views.length,
    pendingTokens: pending / n,
    stepMs: measured === 0 ? undefined : steps / measured,
  }
}
