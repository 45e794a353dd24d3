/**
 * Outlier ejection for one endpoint (a circuit breaker on the request path).
 *
 * - closed: requests flow. `consecutive_failures` failed requests in a row (connect error,
 *   5xx, timeout; see EndpointResult) eject the endpoint; so does one timeout while the pool
 *   has another endpoint to use (`ejectNow`, ejection.on_first_timeout). An `ok` resets the
 *   count; a client abort says nothing about the endpoint and changes nothing.
 * - open (ejected): no requests until the ejection time has passed. The time is
 *   base_ejection_ms x 2^(n-1) for the n-th ejection in a row, capped at max_ejection_ms;
 *   the row starts over once the endpoint has stayed healthy for max_ejection_ms.
 * - half-open: after the ejection time. One probe request at a time may go; its success
 *   closes the breaker, its failure ejects again (for longer). A successful scrape also
 *   closes it: the server answers again.
 *
 * A failed scrape does not count here: it only makes the load data stale (endpoint.ts), so
 * a slow /metrics never ejects an endpoint that serves requests well.
 */
import type { Clock } from '../clock.js'
import type { EndpointResult } from './types.js'

export interface BreakerConfig {
  readonly consecutive_failures: number
  readonly base_ejection_ms: number
  readonly max_ejection_ms: number
}

export type BreakerState = 'closed' | 'open' | 'half_open'

export interface BreakerSnapshot {
  readonly state: BreakerState
  readonly consecutiveFailures: number
  /** Ejections in the current row. */
  readonly ejections: number
  readonly ejectionsTotal: number
  /** Time left in the current ejection, ms. */
  readonly remainingMs: number
  readonly probeInFlight: boolean
}

const isFailure = (r: EndpointResult) => r === 'connect_error' || r === 'server_error' || r === 'timeout'

export class Breaker {
  private failures = 0
  private ejectedUntil: number | undefined
  private row = 0
  private total = 0
  private healthySince: number
  private probe = false

  constructor(
    private readonly clock: Clock,
    private readonly config: BreakerConfig,
  ) {
    this.healthySince = clock.now()
  }

  state(): BreakerState {
    if (this.ejectedUntil === undefined) return 'closed'
    return this.clock.now() < this.ejectedUntil ? 'open' : 'half_open'
  }

  /** Whether a request may be sent now (half-open: only when no probe is in flight). */
  allows(): boolean {
    const s = this.state()
    return s === 'closed' || (s === 'half_open' && !this.probe)
  }

  /** A request is being sent; returns true when it is the half-open probe. */
  onSend(): boolean {
    if (this.state() !== 'half_open' || this.probe) return false
    this.probe = true
    return true
  }

  /** `ejectNow`: a failure that ejects at once (a timeout while the pool has other endpoints). */
  onResult(result: EndpointResult, wasProbe: boolean, ejectNow = false): void {
    if (wasProbe) this.probe = false
    if (result === 'client_abort') return
    if (!isFailure(result)) {
      this.failures = 0
      if (wasProbe || this.state() === 'half_open') this.close()
      return
    }
    if (wasProbe) {
      this.eject()
      return
    }
    if (this.state() !== 'closed') return // late failures of requests sent before the ejection
    this.failures++
    if (ejectNow || this.failures >= this.config.consecutive_failures) this.eject()
  }

  /** A scrape succeeded: a half-open endpoint is back. */
  onScrapeOk(): void {
    if (this.state() === 'half_open') this.close()
  }

  /** Milliseconds until requests may flow again (0 when they may now). */
  retryInMs(): number {
    if (this.ejectedUntil === undefined) return 0
    return Math.max(0, this.ejectedUntil - this.clock.now())
  }

  snapshot(): BreakerSnapshot {
    return {
      state: this.state(),
      consecutiveFailures: this.failures,
      ejections: this.row,
      ejectionsTotal: this.total,
      remainingMs: this.retryInMs(),
      probeInFlight: this.probe,
    }
  }

  private eject(): void {
    const now = this.clock.now()
    if (this.ejectedUntil === undefined && now - this.healthySince >= this.config.max_ejection_ms)
      this.row = 0
    this.row++
    this.total++
    const ms = Math.min(this.config.max_ejection_ms, this.config.base_ejection_ms * 2 ** (this.row - 1))
    this.ejectedUntil = now + ms
    this.failures = 0
    this.probe = false
  }

  private close(): void {
    this.ejectedUntil = undefined
    this.failures = 0
    this.probe = false
    this.healthySince = this.clock.now()
  }
}
