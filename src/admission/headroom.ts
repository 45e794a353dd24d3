/**
 * Headroom at one endpoint for a request of a class: its queue, its batch slots and its KV
 * cache under the class's limits. The gate (gate.ts) and the dispatch forecast's view of
 * the endpoints read it from here.
 */
import type { EndpointView } from '../backends/types.js'

export interface GateLimits {
  /** KV usage the class may dispatch up to (0..1). */
  readonly maxKvUsage: number
  /** Requests waiting in the endpoint's own queue, at most. */
  readonly maxWaiting: number
  /** Requests in flight to the endpoint, fewer than (unless the endpoint's max_num_seqs is known). */
  readonly maxInflight: number
  /** The share of the endpoint's prefill budget the class may fill (classes.<c>.max_prefill_share). */
  readonly prefillShare: number
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
  if (freeSlots(e, limits) === 0) return false
  return kvFits(e, limits, kvTokens)
}

/** Batch slots free at the endpoint: the engine's max_num_seqs (else the class's limit) less the requests in flight. */
export function freeSlots(e: EndpointView, limits: GateLimits): number {
  return Math.max(0, (e.capacity.maxNumSeqs ?? limits.maxInflight) - e.effective.inflightRequests)
}

/** KV tokens free at the endpoint under the class's limit (Infinity: its usage or capacity not known). */
export function kvFreeTokens(e: EndpointView, limits: GateLimits): number {
  const eff = e.effective
  const cap = eff.kvCapacityTokens
  if (eff.kvUsage === undefined || cap === undefined || cap <= 0) return Number.POSITIVE_INFINITY
  return Math.max(0, (limits.maxKvUsage - eff.kvUsage) * cap)
}

/** True when the endpoint's KV usage stays under the class's limit after this request. */
export function kvFits(e: EndpointView, limits: GateLimits, kvTokens: number): boolean {
  const eff = e.effective
  if (eff.kvUsage === undefined) return true
  const cap = eff.kvCapacityTokens
  const after = cap !== undefined && cap > 0 ? eff.kvUsage + kvTokens / cap : eff.kvUsage
  return after <= limits.maxKvUsage
}
