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
 * request larger than the headroom would otherwise never run).
 */
export function hasHeadroom(e: EndpointView, limits: GateLimits, kvTokens: number): boolean {
  const eff = e.effective
  if (eff.inflightRequests === 0 && eff.waiting === 0) return true
  if (eff.waiting > limits.maxWaiting) return false
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

/** Sums the usable endpoints' corrected load into what the estimator reads. */
export function serverView(views: readonly EndpointView[], meanPromptTokens: number): ServerView {
  let waiting = 0
  let running = 0
  for (const v of views) {
    waiting += v.effective.waiting
    running += v.effective.running
  }
  const n = views.length
  return {
    endpoints: n,
    waitingTokens: waiting * meanPromptTokens,
    runningPerEndpoint: n === 0 ? 0 : running / n,
  }
}
