/**
 * Admission for requests it does not judge: a lease on the least-loaded usable endpoint
 * of the pool, or no_backend. Non-generation requests take this path, and every request
 * does when admission is disabled (`admission.enabled: false`: a plain proxy).
 */
import type { BackendPool, Lease } from '../backends/types.js'
import { GatewayError } from '../errors.js'
import type { Ticket } from '../ticket.js'
import type { AdmissionControl, Admitted } from './face.js'

/**
 * No endpoint of the pool can take the request now. Retry-After: when one is expected
 * back (its ejection ends, a scrape makes it fresh), and never sooner than the next scrape,
 * which is the soonest the gateway can know of a change.
 */
export function noBackend(t: Ticket, pool: BackendPool): GatewayError {
  return new GatewayError(
    'GW_ERR_NO_BACKEND',
    { model: t.model ?? pool.name },
    { retryAfterMs: Math.max(pool.config.scrape_interval_ms, pool.retryAfterMs()) },
  )
}

export function acquireDirect(t: Ticket, pool: BackendPool | undefined): Lease | GatewayError {
  if (pool === undefined) return new GatewayError('GW_ERR_NO_BACKEND', { model: '' })
  return pool.acquire(t.promptTokens + t.expectedOutputTokens) ?? noBackend(t, pool)
}

export class PassThrough implements AdmissionControl {
  admit(ticket: Ticket, _body: unknown, pool: BackendPool | undefined): Admitted {
    return acquireDirect(ticket, pool)
  }
  queueDepths(): [] {
    return []
  }
  pumpAll(): void {}
  state(): undefined {
    return undefined
  }
  close(): void {}
}
