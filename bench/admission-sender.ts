/**
 * The load generator's sending loop: plays a schedule of arrivals open-loop (each sent when it
 * is due, wall = model time × scale, whatever is still open) and reads every response
 * (admission-client.ts). The run (admission-run.ts) plays interactive requests in its own
 * thread and batch in a worker thread (admission-batch-worker.ts) with a loop of its own, so
 * the tokens of the batch flood's streams do not delay the reading, and the timing, of an
 * interactive request's response (a refusal's among them): the two threads run on both cores
 * as two client machines would.
 */
import { setMaxListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { Pool } from 'undici'
import { type Outcome, sendOne } from './admission-client.js'
import type { Arrival } from './admission-workload.js'

/** An arrival placed on the run's timeline: `arrival.atMs` is model ms from the run's start. */
export interface Scheduled {
  /** Its segment (index in the run's segments). */
  readonly seg: number
  /** Its prompt tag (unique per run and segment). */
  readonly tag: string
  readonly arrival: Arrival
}

export interface SenderOptions {
  /** Where to send; several comma-separated: round-robin over them (a client-side balancer). */
  readonly url: string
  readonly model: string
  readonly scale: number
  /** The run's start, `performance.now()` of this thread. */
  readonly t0: number
  /** When everything still open is cut off, model ms from the run's start. */
  readonly endMs: number
}

export interface Sent {
  readonly seg: number
  /** How late it was sent against its schedule, wall ms. */
  readonly lagMs: number
  readonly outcome: Promise<Outcome>
  /**
   * Sends the same request again (same prompt) `delayMs` wall ms from now, as a client honouring
   * a refusal's Retry-After does; undefined when that is at or past the run's cut-off.
   */
  readonly again: (delayMs: number) => Promise<Outcome> | undefined
}

/**
 * Sends `schedule` (in time order) and cuts off what is still open at `endMs`; `onSent` is told
 * of each request as it goes. Resolves when every request has ended.
 */
export async function playSchedule(
  o: SenderOptions,
  schedule: readonly Scheduled[],
  onSent: (s: Sent) => void,
): Promise<void> {
  // No headers/body timeouts: a request may wait in the gateway's queue (no headers yet) or at the
  // server (no token yet) until the cut-off, which ends it.
  const clients = o.url
    .split(',')
    .map((u) => new Pool(u, { connections: 8192, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 }))
  const ac = new AbortController()
  setMaxListeners(Number.POSITIVE_INFINITY, ac.signal)
  const ctx = { model: o.model, t0: o.t0, signal: ac.signal }
  const pending: Promise<Outcome>[] = []
  const send = (tag: string, arrival: Arrival, due: number) => {
    const outcome = sendOne(
      { ...ctx, client: clients[pending.length % clients.length] as Pool, tag },
      arrival,
      due,
    )
    pending.push(outcome)
    return outcome
  }
  for (const { seg, tag, arrival } of schedule) {
    const due = arrival.atMs * o.scale
    const wait = due - (performance.now() - o.t0)
    if (wait > 1) await sleep(wait)
    const lagMs = Math.max(0, performance.now() - o.t0 - due)
    const again = (delayMs: number) => {
      const retryDue = performance.now() - o.t0 + delayMs
      if (ac.signal.aborted || retryDue >= o.endMs * o.scale) return undefined
      const retried = sleep(delayMs).then(() => send(tag, arrival, retryDue))
      pending.push(retried)
      return retried
    }
    onSent({ seg, lagMs, outcome: send(tag, arrival, due), again })
  }
  const rest = o.endMs * o.scale - (performance.now() - o.t0)
  if (rest > 0) await sleep(rest)
  ac.abort()
  await Promise.all(pending)
  await Promise.all(clients.map((c) => c.destroy().catch(() => {})))
}
