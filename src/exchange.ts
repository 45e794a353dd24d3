/**
 * The events of one exchange, told to the parts that care through one interface.
 *
 * After dispatch a request is something that happens over time: it is sent, its response
 * starts, its first token arrives, its tokens stream, it ends. Admission (prefill and
 * decode accounting, learning), the backends' ledger (the lease) and telemetry (the
 * record) each react to some of these. They do so as `ExchangeObserver`s registered with
 * the request's `Exchange`; the `Ticket` stays a plain record.
 *
 * The Exchange fires each event from one place and guards the once-events: `dispatched`,
 * `responseStarted`, `firstToken` and `prefilled` fire at most once, `ended` exactly once,
 * however the request ends (done, refused, upstream error, timeout, client gone before or
 * after dispatch). `prefilled` fires for every dispatched request: at its first content
 * token when it streams one, else when it ends.
 *
 * Order: per-request observers (added with `observe`, e.g. the lease) hear each event
 * before the gateway-wide ones given at construction (telemetry, accounting), each list
 * in the order it was built.
 */
import type { Clock } from './clock.js'
import type { GatewayError } from './errors.js'
import type { Ticket } from './ticket.js'

/** How an exchange with an endpoint ended, as the breaker sees it. */
export type EndpointResult = 'ok' | 'connect_error' | 'server_error' | 'timeout' | 'client_abort'

/** Every method is optional; each is called with the request's ticket. Must not throw. */
export interface ExchangeObserver {
  /** Sent to an endpoint (`ticket.backend`). */
  dispatched?(ticket: Ticket): void
  /** The endpoint's status and headers arrived (`ticket.status`). */
  responseStarted?(ticket: Ticket): void
  /** The first content token was relayed (streamed responses). */
  firstToken?(ticket: Ticket): void
  /** A gap between two consecutive content chunks, each time (streamed responses). */
  tokenGap?(ticket: Ticket, gapMs: number, now: number): void
  /** The endpoint is done prefilling this request: its first token, else its end. */
  prefilled?(ticket: Ticket): void
  /**
   * The exchange is over (`ticket.outcome` says how). `result` is how the endpoint
   * exchange ended; undefined when the request was never sent.
   */
  ended?(ticket: Ticket, result: EndpointResult | undefined): void
}

const DISPATCHED = 1
const STARTED = 2
const PREFILLED = 4
const ENDED = 8

export class Exchange {
  readonly ticket: Ticket
  private readonly clock: Clock
  private readonly own: ExchangeObserver[] = []
  private readonly shared: readonly ExchangeObserver[]
  private fired = 0
  private stopper: ((err: GatewayError) => void) | undefined = undefined

  constructor(ticket: Ticket, clock: Clock, shared: readonly ExchangeObserver[]) {
    this.ticket = ticket
    this.clock = clock
    this.shared = shared
  }

  /** Adds an observer for this exchange only (before the gateway-wide ones). */
  observe(observer: ExchangeObserver): void {
    this.own.push(observer)
  }

  get isEnded(): boolean {
    return (this.fired & ENDED) !== 0
  }

  /**
   * Who can end this exchange early, with an error for the client: the stage holding it
   * (admission while it is queued, forward while it is sent). The last one set wins.
   */
  onStop(stopper: (err: GatewayError) => void): void {
    this.stopper = stopper
  }

  /** Ends the exchange early (the gateway is going away): the client gets `err`. */
  stop(err: GatewayError): void {
    if (this.fired & ENDED) return
    this.stopper?.(err)
  }

  dispatched(backend: string): void {
    if (this.fired & (DISPATCHED | ENDED)) return
    this.fired |= DISPATCHED
    const t = this.ticket
    t.dispatchedAt = this.clock.now()
    t.backend = backend
    for (const o of this.own) o.dispatched?.(t)
    for (const o of this.shared) o.dispatched?.(t)
  }

  responseStarted(status: number): void {
    if (this.fired & (STARTED | ENDED)) return
    this.fired |= STARTED
    const t = this.ticket
    t.responseStartedAt = this.clock.now()
    t.status = status
    for (const o of this.own) o.responseStarted?.(t)
    for (const o of this.shared) o.responseStarted?.(t)
  }

  /** One content-bearing chunk was relayed to the client. */
  contentToken(): void {
    if (this.fired & ENDED) return
    const t = this.ticket
    const now = this.clock.now()
    if (t.firstTokenAt === undefined) {
      t.firstTokenAt = now
      for (const o of this.own) o.firstToken?.(t)
      for (const o of this.shared) o.firstToken?.(t)
      this.prefilled()
    } else if (t.lastTokenAt !== undefined) {
      const gap = now - t.lastTokenAt
      t.itlMs.push(gap)
      for (const o of this.own) o.tokenGap?.(t, gap, now)
      for (const o of this.shared) o.tokenGap?.(t, gap, now)
    }
    t.lastTokenAt = now
    t.contentChunks++
  }

  /** Ends the exchange (once; later calls are no-ops). */
  end(result: EndpointResult | undefined): void {
    if (this.fired & ENDED) return
    const t = this.ticket
    if (t.finishedAt === undefined) t.finishedAt = this.clock.now()
    if (this.fired & DISPATCHED) this.prefilled()
    this.fired |= ENDED
    for (const o of this.own) o.ended?.(t, result)
    for (const o of this.shared) o.ended?.(t, result)
  }

  private prefilled(): void {
    if (this.fired & PREFILLED) return
    this.fired |= PREFILLED
    const t = this.ticket
    for (const o of this.own) o.prefilled?.(t)
    for (const o of this.shared) o.prefilled?.(t)
  }
}
