/**
 * The limiter store's health on /metrics: errors by store and code, and whether this
 * replica runs degraded (Redis unreachable: the fail-open share or fail-closed refusals).
 */
import { Counter, Gauge, type Registry } from 'prom-client'
import type { FailoverSignals } from './failover.js'

export function limiterMetrics(registry: Registry, store: string): FailoverSignals {
  const errors = new Counter({
    name: 'slo_gateway_ratelimit_store_errors_total',
    help: 'Tenant limiter store calls that failed (timeout, unavailable, bad reply), by store and code.',
    labelNames: ['store', 'code'],
    registers: [registry],
  })
  const degraded = new Gauge({
    name: 'slo_gateway_ratelimit_degraded_mode',
    help: '1 while the shared limiter store cannot answer and the on_store_error policy applies, else 0.',
    labelNames: ['store'],
    registers: [registry],
  })
  degraded.set({ store }, 0)
  return {
    storeError: (s, code) => errors.inc({ store: s, code }),
    degraded: (s, on) => degraded.set({ store: s }, on ? 1 : 0),
  }
}
