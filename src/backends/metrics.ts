/**
 * The backends' Prometheus series, read from the current state when /metrics is scraped
 * (collect callbacks, no per-event updates). Labels: `pool` and `backend` (the endpoint's
 * name, never its address). Series of endpoints that left disappear with them.
 *
 * - slo_gateway_backend_up                1 when the last scrape succeeded and was readable
 * - slo_gateway_backend_kv_usage_ratio    scraped KV usage 0..1 (absent when not reported)
 * - slo_gateway_backend_waiting           scraped requests waiting
 * - slo_gateway_backend_running           scraped requests running
 * - slo_gateway_backend_scrape_age_seconds age of the load data in use (+Inf: none yet)
 * - slo_gateway_backend_ejected           1 while ejected or half-open (probing)
 * The ledger (requests and tokens in flight per endpoint) is in /admin/state.
 */
import { Gauge, type Registry } from 'prom-client'
import type { Clock } from '../clock.js'
import type { PoolEndpoint } from './endpoint.js'
import type { EndpointPool } from './pool.js'

type Reading = (ep: PoolEndpoint, now: number) => number | undefined

const SERIES: ReadonlyArray<readonly [name: string, help: string, read: Reading]> = [
  [
    'slo_gateway_backend_up',
    'Whether the last metrics scrape of the backend succeeded (1) or not (0).',
    (ep) => (ep.up ? 1 : 0),
  ],
  [
    'slo_gateway_backend_kv_usage_ratio',
    'KV cache usage of the backend as last scraped, 0..1.',
    (ep) => ep.load?.kvUsage,
  ],
  [
    'slo_gateway_backend_waiting',
    'Requests waiting in the backend queue as last scraped.',
    (ep) => ep.load?.waiting,
  ],
  [
    'slo_gateway_backend_running',
    'Requests running in the backend batch as last scraped.',
    (ep) => ep.load?.running,
  ],
  [
    'slo_gateway_backend_scrape_age_seconds',
    'Age of the backend load data in use, seconds (+Inf when never scraped).',
    (ep, now) => {
      const age = ep.ageMs(now)
      return age === undefined ? Number.POSITIVE_INFINITY : age / 1000
    },
  ],
  [
    'slo_gateway_backend_ejected',
    'Whether the backend is ejected by the breaker (1, including half-open) or not (0).',
    (ep) => (ep.breaker.state() === 'closed' ? 0 : 1),
  ],
]

export function registerBackendMetrics(
  registry: Registry,
  clock: Clock,
  pools: () => readonly EndpointPool[],
): void {
  for (const [name, help, read] of SERIES) {
    new Gauge({
      name,
      help,
      labelNames: ['pool', 'backend'] as const,
      registers: [registry],
      collect() {
        this.reset()
        const now = clock.now()
        for (const pool of pools()) {
          for (const ep of pool.allEndpoints()) {
            const v = read(ep, now)
            if (v !== undefined) this.set({ pool: pool.name, backend: ep.name }, v)
          }
        }
      },
    })
  }
}
