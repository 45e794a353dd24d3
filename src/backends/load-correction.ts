/**
 * Effective load: the last scrape corrected by the ledger, so that a burst between two
 * scrapes does not all land on the endpoint that looked idle 100 ms ago.
 *
 * With the scraped W (waiting), R (running), U (KV usage 0..1), the KV capacity C (scraped,
 * else the pool's `capacity.kv_tokens`), and from the ledger (ledger.ts):
 *   new  = requests (and their tokens) sent after the scrape was taken, still in flight;
 *   done = requests sent before it that have finished since;
 *
 *   R1 = max(0, R - done)                  finished requests leave the batch first,
 *   W1 = max(0, W - max(0, done - R))      and the queue with what is left;
 *   started = requests sent before it that had their first token since and are in flight:
 *      up to W1 of them left the queue for the batch (W1 -= moved, R1 += moved), so a
 *      queue the scrape saw of the gateway's own prompts, prefilled since, does not hold
 *      the next dispatch until the next scrape;
 *   if W == 0 (the scrape showed no queue): new requests start running, up to the
 *      batch limit S (`capacity.max_num_seqs`; unlimited when unknown):
 *      moved = min(new, max(0, S - R1));  R' = R1 + moved;  W' = W1 + new - moved
 *   else (requests were already queueing): R' = R1;  W' = W1 + new
 *   U' = clamp01(max(U + (newTokens - doneTokens) / C, inflightTokens / C))
 *                                                     when U and C are known (the engine
 *                                                     counts computed tokens; in-flight
 *                                                     requests will grow to what they reserve,
 *                                                     a prompt block they share counted once:
 *                                                     inflight-blocks.ts),
 *   U' = U                                            when only U is known,
 *   U' = clamp01(inflightTokens / C)                  when the engine gives no usage
 *                                                     (TGI, llama.cpp): the ledger stands in,
 *   U' = undefined                                    when neither.
 * Never scraped: W = R = 0 and every in-flight request counts as new.
 */
import type { LedgerSnapshot } from './ledger.js'
import type { BackendLoad, EffectiveLoad } from './types.js'

export interface CorrectionInput {
  readonly load: BackendLoad | undefined
  readonly ledger: LedgerSnapshot
  readonly fresh: boolean
  readonly ageMs: number | undefined
  readonly capacity: { readonly maxNumSeqs?: number; readonly kvTokens?: number }
}

const clamp01 = (x: number) => Math.min(1, Math.max(0, x))

/** A pool's configured `capacity` in the correction's (and the views') terms: the keys it sets. */
export function capacityOf(cap: {
  readonly max_num_seqs?: number | undefined
  readonly kv_tokens?: number | undefined
}): CorrectionInput['capacity'] {
  return {
    ...(cap.max_num_seqs === undefined ? {} : { maxNumSeqs: cap.max_num_seqs }),
    ...(cap.kv_tokens === undefined ? {} : { kvTokens: cap.kv_tokens }),
  }
}

export function correctLoad(input: CorrectionInput): EffectiveLoad {
  const { load, ledger, capacity } = input
  const scraped = load !== undefined
  const newReqs = scraped ? ledger.newRequests : ledger.requests
  const newToks = scraped ? ledger.newTokens : ledger.tokens
  const doneReqs = scraped ? ledger.doneRequests : 0
  const doneToks = scraped ? ledger.doneTokens : 0
  const w = load?.waiting ?? 0
  const r = load?.running ?? 0

  const startedReqs = scraped ? (ledger.startedRequests ?? 0) : 0
  let r1 = Math.max(0, r - doneReqs)
  let w1 = Math.max(0, w - Math.max(0, doneReqs - r))
  const started = Math.min(w1, startedReqs)
  w1 -= started
  r1 += started
  let running = r1
  let waiting = w1 + newReqs
  if (w === 0) {
    const free = capacity.maxNumSeqs === undefined ? newReqs : Math.max(0, capacity.maxNumSeqs - r1)
    const moved = Math.min(newReqs, free)
    running += moved
    waiting -= moved
  }

  const cap = load?.kvCapacityTokens ?? capacity.kvTokens
  let kvUsage: number | undefined
  if (load?.kvUsage !== undefined) {
    // The engine counts blocks as tokens are computed; the gateway's requests will grow to
    // their prompt + expected output, so what they reserve (the ledger) is a floor.
    kvUsage =
      cap !== undefined && cap > 0
        ? clamp01(Math.max(load.kvUsage + (newToks - doneToks) / cap, ledger.tokens / cap))
        : load.kvUsage
  } else if (cap !== undefined && cap > 0) {
    kvUsage = clamp01(ledger.tokens / cap)
  }

  const out: EffectiveLoad = {
    waiting,
    running,
    inflightRequests: ledger.requests,
    inflightTokens: ledger.tokens,
    fresh: input.fresh,
  }
  if (kvUsage !== undefined) out.kvUsage = kvUsage
  if (cap !== undefined) out.kvCapacityTokens = cap
  if (input.ageMs !== undefined) out.ageMs = input.ageMs
  return out
}
