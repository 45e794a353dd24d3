/**
 * Admission's face: what the request's path sees of admission, and all it sees.
 *
 * Given the ticket (after parse) and the parsed body, admission returns a lease on an
 * endpoint now, a `Queued` that gives one later, or the refusal to answer with. Its
 * queues, gates, estimator and errors stay inside it: every refusal for capacity
 * (`ttft_slo`, `kv_exhausted`, `queue_full`, `queue_timeout`, `no_backend`) is made there.
 */
import type { BackendPool, Lease } from '../backends/types.js'
import type { GatewayError } from '../errors.js'
import type { JsonBody } from '../openai/request-fields.js'
import type { Ticket } from '../ticket.js'

/** A request waiting in admission's queue for its lease. */
export interface Queued {
  /** Resolves with the lease when the request is dispatched, or the error it is shed with. */
  readonly lease: Promise<Lease | GatewayError>
  /** The client went away: take the request out of the queue. False when it had already left it. */
  cancel(): boolean
}

export type Admitted = Lease | GatewayError | Queued

/** Queue depth and in-flight count of one class in one pool (telemetry reads it at scrape time). */
export interface QueueDepth {
  readonly class: string
  readonly pool: string
  readonly queued: number
  readonly inflight: number
  /** The class's TTFT margin in this pool, for classes refused on their predicted TTFT. */
  readonly ttftMargin?: number
  /** The class's TPOT margin in this pool (the decode guard's), for classes with a TPOT objective. */
  readonly tpotMargin?: number
}

export interface AdmissionControl {
  /**
   * A lease now, a lease later, or a refusal. The lease is the request's observer of its
   * exchange (it must be registered with it before the request is sent).
   */
  admit(ticket: Ticket, body: JsonBody | undefined, pool: BackendPool | undefined): Admitted
  /** Queue depths per pool and class. */
  queueDepths(): Iterable<QueueDepth>
  /** After a scrape or a membership change: dispatch what can go. */
  pumpAll(): void
  /** JSON for /admin/state. */
  state(): object | undefined
  /** Stops timers; queued requests are shed (draining). */
  close(): void
}

/** True when `admit` gave a request that waits for its lease. */
export function isQueued(a: Admitted): a is Queued {
  return 'cancel' in a
}
