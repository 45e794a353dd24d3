/**
 * The telemetry capability wired together: metrics on the given registry, the per-request
 * recorder, tenant label cap, cost attribution, backend-derived metrics, rolling windows
 * and the periodic summary line.
 */
import type { Registry } from 'prom-client'
import type { Backends } from '../backends/types.js'
import type { Clock } from '../clock.js'
import type { GatewayConfig } from '../config/schema.js'
import type { Ticket } from '../ticket.js'
import { BackendMetrics } from './backend-metrics.js'
import { CostAttributor, type PoolCost } from './cost.js'
import { createMetrics } from './metrics.js'
import { Recorder } from './recorder.js'
import { RollingWindows, type WindowName, type WindowSeries, type WindowStats } from './rolling-windows.js'
import { summaryLines } from './summary.js'
import { TenantLabels } from './tenant-labels.js'
import { type TenantCost, TenantWindows } from './tenant-windows.js'
import type { ScatterError } from './ttft-scatter.js'
import type { Verdict } from './verdict.js'

export interface QueueSample {
  readonly class: string
  readonly pool: string
  readonly queued: number
  readonly inflight: number
  /** The class's TTFT margin in this pool, for classes refused on their predicted TTFT. */
  readonly ttftMargin?: number
  /** The class's TPOT margin in this pool (the decode guard's), for classes with a TPOT objective. */
  readonly tpotMargin?: number
}

/** The last 5 minutes as the dashboard draws them (times as ms ago, the clock's origin is arbitrary). */
export interface TelemetryHistory {
  /** The 1-minute and 5-minute windows per class, as /admin/state has them under `slo.windows`. */
  readonly windows: Record<string, Record<WindowName, WindowStats>>
  /** Per class: 5-second slots, oldest first; `startAgoMs` is how long ago the first began. */
  readonly series: Record<string, Omit<WindowSeries, 'startMs'> & { readonly startAgoMs: number }>
  /** Per class: predicted against actual TTFT of the last requests, [predictedMs, actualMs, agoMs, pool]. */
  readonly scatter: Record<
    string,
    { readonly points: [number, number, number, string][]; readonly error: ScatterError }
  >
  /** Tokens, cost and cost per 1K tokens per tenant over the last 5 minutes. */
  readonly tenants: TenantCost[]
}

export interface TelemetryLogger {
  info(obj: object, msg?: string): void
  /** pino's: the periodic summary is not computed while its lines would not be written. */
  isLevelEnabled?(level: string): boolean
}

export interface TelemetryDeps {
  registry: Registry
  clock: Clock
  logger?: TelemetryLogger
  backends?: Backends
}

export interface Telemetry {
  /** Once per request when it ends, whatever the outcome; returns the request's verdict. */
  record(ticket: Ticket): Verdict
  /** One HTTP request on any public route (called by the accounting observer when the exchange ends), `route` being the route pattern. */
  observeHttp(route: string, method: string, status: number, durationSeconds: number): void
  /** Queue depth / in-flight per class and pool, read at scrape time. */
  setQueueSource(fn: () => Iterable<QueueSample>): void
  /** JSON for /admin/state: rolling 1 min / 5 min windows per class, tenant labels, cost. */
  state(): unknown
  /** The rolling windows' 5 minutes slot by slot, the TTFT scatter and cost per tenant: for /dashboard. */
  history(): TelemetryHistory
  /** Stops the timers. */
  close(): void
}

export function createTelemetry(config: GatewayConfig, deps: TelemetryDeps): Telemetry {
  const { clock, registry, backends, logger } = deps
  const tc = config.telemetry
  const start = clock.now()
  let onScrape = () => {}
  const metrics = createMetrics(config, registry, () => onScrape())
  for (const [name, cls] of Object.entries(config.classes)) {
    if (cls.slo.ttft_ms !== undefined)
      metrics.sloThreshold.set({ class: name, slo: 'ttft' }, cls.slo.ttft_ms / 1000)
    if (cls.slo.tpot_ms !== undefined)
      metrics.sloThreshold.set({ class: name, slo: 'tpot' }, cls.slo.tpot_ms / 1000)
    if (cls.slo.e2e_ms !== undefined)
      metrics.sloThreshold.set({ class: name, slo: 'e2e' }, cls.slo.e2e_ms / 1000)
  }

  let queueSource: (() => Iterable<QueueSample>) | undefined
  const backendMetrics =
    backends === undefined ? undefined : new BackendMetrics(backends, metrics, tc.backend_sample_interval_ms)

  const inflightOf = (pool: string): number => {
    let n = 0
    try {
      if (queueSource !== undefined) for (const q of queueSource()) if (q.pool === pool) n += q.inflight
    } catch {
      // treated as nothing in flight (see onScrape)
    }
    return n
  }
  const poolCosts = function* (): Iterable<PoolCost> {
    if (backends !== undefined) {
      for (const p of backends.pools()) {
        if (!(p.config.cost_per_hour > 0)) continue
        const busy = inflightOf(p.name) > 0 || (backendMetrics?.running(p.name) ?? false)
        yield { name: p.name, costPerHour: p.config.cost_per_hour, endpoints: p.endpoints().length, busy }
      }
      return
    }
    for (const p of config.backends.pools) {
      if (!(p.cost_per_hour > 0)) continue
      yield {
        name: p.name,
        costPerHour: p.cost_per_hour,
        endpoints: p.endpoints.length,
        busy: inflightOf(p.name) > 0,
      }
    }
  }

  const windows = new RollingWindows(start, Object.keys(config.classes))
  let recorder: Recorder | undefined
  const tenants = new TenantLabels({
    limit: tc.tenant_label_limit,
    rebalanceMs: tc.tenant_label_rebalance_ms,
    now: start,
    onEvict: (evicted) => recorder?.evict(evicted),
  })
  const cost = new CostAttributor({
    intervalMs: tc.cost_interval_ms,
    now: start,
    pools: poolCosts,
    onShare: (share, now) => recorder?.bookCost(share, now),
  })
  const tenantWindows = new TenantWindows()
  const rec = new Recorder({ config, metrics, tenants, windows, cost, tenantWindows })
  recorder = rec

  // Scrape-time work: gauges from the queue source, backend counters, cost intervals.
  onScrape = () => {
    const now = clock.now()
    cost.tick(now)
    backendMetrics?.sync()
    backendMetrics?.sample(now)
    metrics.queueDepth.reset()
    metrics.inflight.reset()
    metrics.ttftMargin.reset()
    metrics.tpotMargin.reset()
    if (queueSource === undefined) return
    try {
      for (const q of queueSource()) {
        metrics.queueDepth.inc({ class: q.class, pool: q.pool }, q.queued)
        metrics.inflight.inc({ class: q.class, pool: q.pool }, q.inflight)
        if (q.ttftMargin !== undefined) metrics.ttftMargin.set({ class: q.class, pool: q.pool }, q.ttftMargin)
        if (q.tpotMargin !== undefined) metrics.tpotMargin.set({ class: q.class, pool: q.pool }, q.tpotMargin)
      }
    } catch (err) {
      // A failing source must not fail the whole scrape: the gauges are just absent.
      logger?.info({ err }, 'telemetry: queue source failed')
    }
  }

  const timers: NodeJS.Timeout[] = []
  if (backendMetrics !== undefined || config.backends.pools.some((p) => p.cost_per_hour > 0)) {
    const every = Math.min(tc.backend_sample_interval_ms, tc.cost_interval_ms)
    timers.push(
      setInterval(() => {
        const now = clock.now()
        backendMetrics?.sample(now)
        cost.tick(now)
      }, every),
    )
  }
  if (tc.summary_interval_ms > 0 && logger !== undefined) {
    timers.push(
      setInterval(() => {
        if (logger.isLevelEnabled?.('info') === false) return
        for (const line of summaryLines(windows, clock.now())) logger.info(line, 'slo summary')
      }, tc.summary_interval_ms),
    )
  }
  for (const t of timers) t.unref()

  return {
    record: (ticket) => rec.record(ticket, clock.now()),
    observeHttp: (route, method, status, seconds) => rec.observeHttp(route, method, status, seconds),
    setQueueSource: (fn) => {
      queueSource = fn
    },
    state: () => {
      const now = clock.now()
      cost.tick(now)
      return {
        windows: windows.snapshot(now),
        tenants: { limit: tc.tenant_label_limit, labelled: tenants.labelledTenants() },
        cost: { carried: cost.carried() },
      }
    },
    history: () => {
      const now = clock.now()
      cost.tick(now)
      const series: Record<string, TelemetryHistory['series'][string]> = {}
      const scatter: Record<string, TelemetryHistory['scatter'][string]> = {}
      for (const cls of windows.classes()) {
        const w = windows.of(cls)
        const { startMs, ...slots } = w.series(now)
        series[cls] = { ...slots, startAgoMs: now - startMs }
        const points = w.scatter
          .points()
          .map((p): [number, number, number, string] => [
            Math.round(p.predictedMs * 10) / 10,
            Math.round(p.actualMs * 10) / 10,
            Math.round(now - p.at),
            p.pool,
          ])
        scatter[cls] = { points, error: w.scatter.error() }
      }
      return { windows: windows.snapshot(now), series, scatter, tenants: tenantWindows.stats(now) }
    },
    close: () => {
      for (const t of timers) clearInterval(t)
      timers.length = 0
    },
  }
}
