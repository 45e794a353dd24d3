import type { Deque } from './deque.js'
import type { EngineStats } from './engine-stats.js'
import type { KvBlockManager } from './kv-block-manager.js'
import type { EngineLimits } from './profile-schema.js'
import type { SimRequest } from './sim-request.js'
import type { StepCost } from './step-model.js'

/**
 * One step's schedule. Its arrays are reused from step to step (an engine steps millions of
 * times in a plan's sweep: no object per sequence per step); valid until the next
 * scheduleStep given the same plan.
 */
export interface StepPlan {
  /** The sequences scheduled, in order; the first `length` entries count. */
  readonly reqs: SimRequest[]
  /** Tokens each computes in the step (1 for a decode, a chunk for a prefill). */
  readonly numNew: number[]
  length: number
  cost: StepCost
  preempted: number
}

export function newStepPlan(): StepPlan {
  return {
    reqs: [],
    numNew: [],
    length: 0,
    cost: { prefillTokens: 0, decodeSeqs: 0, contextTokens: 0 },
    preempted: 0,
  }
}

/** Adds a sequence to the plan; returns the tokens it computes. */
function take(plan: StepPlan, req: SimRequest, numNew: number, cost: MutableCost): number {
  plan.reqs[plan.length] = req
  plan.numNew[plan.length] = numNew
  plan.length++
  cost.contextTokens += req.numComputed + numNew
  if (req.inPrefill) cost.prefillTokens += numNew
  else cost.decodeSeqs++
  return numNew
}

type MutableCost = { -readonly [K in keyof StepCost]: StepCost[K] }

export interface Queues {
  /** Running sequences, oldest admission first (the newest is preempted first). */
  running: SimRequest[]
  /** Waiting sequences, FCFS; preempted ones go back to the front. */
  readonly waiting: Deque<SimRequest>
}

/**
 * One scheduling decision, as vLLM V1's scheduler makes it (FCFS policy, chunked prefill on):
 *
 * 1. Running sequences first, in order, while the token budget lasts: each gets the rest of its
 *    known tokens (1 for a decode, or the next chunk of a chunked prefill). KV blocks are allocated
 *    for the new tokens; when that fails, the newest running sequence is preempted (blocks freed,
 *    progress dropped, back to the front of the waiting queue) and the allocation is retried.
 * 2. If nothing was preempted, waiting sequences FCFS while budget and `max_num_seqs` allow: prefix
 *    cache hits first (when enabled), then a prefill chunk from what is left of the budget. The
 *    first one that cannot get its blocks stops the admission.
 */
export function scheduleStep(
  q: Queues,
  kv: KvBlockManager,
  limits: EngineLimits,
  stats: EngineStats,
  plan: StepPlan = newStepPlan(),
): StepPlan {
  let budget = limits.maxNumBatchedTokens
  const cost: MutableCost = { prefillTokens: 0, decodeSeqs: 0, contextTokens: 0 }
  let preempted = 0
  // (entries past `length` may still name the requests of an earlier, larger step: at most a batch)
  plan.length = 0

  let i = 0
  running: while (i < q.running.length && budget > 0) {
    const req = q.running[i]!
    const numNew = Math.min(req.numTokens - req.numComputed, budget)
    while (!kv.allocate(req, req.numComputed + numNew)) {
      const victim = q.running.pop() as SimRequest
      preempt(victim, kv, q, stats)
      preempted++
      if (victim === req) break running
    }
    budget -= take(plan, req, numNew, cost)
    i++
  }

  if (preempted === 0 || plan.length === 0) {
    while (q.waiting.length > 0 && budget > 0 && q.running.length < limits.maxNumSeqs) {
      const req = q.waiting.peek() as SimRequest
      const hits = lookupPrefix(req, kv, limits)
      const numNew = Math.min(req.numTokens - req.numComputed, budget)
      if (!kv.allocate(req, req.numComputed + numNew)) {
        kv.free(req)
        req.numComputed = 0
        break
      }
      q.waiting.shift()
      if (limits.enablePrefixCaching) {
        stats.prefixQueries += req.numTokens
        stats.prefixHits += hits
      }
      req.cachedPromptTokens = hits
      req.state = 'running'
      q.running.push(req)
      budget -= take(plan, req, numNew, cost)
    }
  }

  plan.cost = cost
  plan.preempted = preempted
  return plan
}

function preempt(victim: SimRequest, kv: KvBlockManager, q: Queues, stats: EngineStats): void {
  kv.free(victim)
  victim.numComputed = 0
  victim.state = 'waiting'
  victim.numPreemptions++
  q.waiting.unshift(victim)
  stats.preemptions++
}

/** Prefix-cache lookup for a sequence about to be admitted; returns the tokens hit. */
function lookupPrefix(req: SimRequest, kv: KvBlockManager, limits: EngineLimits): number {
  if (!limits.enablePrefixCaching || req.numComputed > 0 || req.blockHashes.length === 0) return 0
  // At least one token must be computed to produce logits, so a full hit recomputes the last block.
  const maxBlocks = Math.floor((req.numTokens - 1) / limits.blockSize)
  const blocks = kv.acquirePrefix(req, req.blockHashes, maxBlocks)
  req.numComputed = blocks * limits.blockSize
  return req.numComputed
}
