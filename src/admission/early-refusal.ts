/**
 * Early refusal: after each dispatch cycle (a completion, a scrape, a deadline), every
 * queued request of a class refused on its TTFT is predicted again: its wait so far, plus
 * the queue model's wait for the prompt tokens now ahead of it, plus its server part as
 * predicted on arrival. One that can no longer meet its own TTFT objective is refused now
 * (503 ttft_slo, Retry-After from the predicted drain), not at its deadline: a client
 * refused in milliseconds can go elsewhere in time. queue_timeout is left for a request
 * that was on track and then missed. PoolAdmission runs it at most every SHED_INTERVAL_MS.
 */
import type { ClassQueues } from './class-queues.js'
import type { Waiting } from './waiting.js'

/** Queued requests are predicted again at most this often (each pump otherwise). */
export const SHED_INTERVAL_MS = 10

export interface Hopeless {
  readonly item: Waiting
  /** Its TTFT as predicted now, ms. */
  readonly predictedMs: number
  /** Prompt tokens queued ahead of it now. */
  readonly aheadTokens: number
}

/** What is queued ahead of a request: its prompt tokens (to compute) and how many requests. */
export interface Ahead {
  readonly tokens: number
  readonly requests: number
}

/**
 * Removes from class `name` the requests predicted to miss their TTFT objective (their
 * own, else `classSloMs`) and returns them, oldest first. `queueWaitMs`: the queue model's
 * wait for `aheadTokens` queued ahead of a prompt of `ownTokens`.
 */
export function shedHopeless(
  queues: ClassQueues<Waiting>,
  name: string,
  classSloMs: number,
  now: number,
  queueWaitMs: (w: Waiting, ahead: Ahead) => number,
): Hopeless[] {
  const out: Hopeless[] = []
  queues.shedWhere(name, (w, tokens, requests) => {
    const slo = w.ticket.slo?.ttft_ms ?? classSloMs
    const predictedMs =
      now - w.ticket.arrivedAt + queueWaitMs(w, { tokens, requests }) + w.prediction.serverMs
    if (predictedMs <= slo) return false
    out.push({ item: w, predictedMs, aheadTokens: tokens })
    return true
  })
  return out
}
