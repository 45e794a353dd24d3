/**
 * GET /dashboard/data: the compact JSON the dashboard page draws, read from the same
 * sources as /admin/state (the telemetry's rolling windows, admission's queues and
 * estimator, the backends' state), with the 5 minutes of 5-second slots the windows keep
 * and the estimator's last predictions. Documented in docs/metrics.md ("The dashboard").
 */
import type { ClassConfig } from '../config/schema.js'
import { isRecord } from '../is-record.js'
import type { TelemetryHistory } from '../telemetry/index.js'

/** Bumped when a field changes meaning or goes away (new fields do not bump it). */
export const DASHBOARD_DATA_VERSION = 1

export interface DashboardClass {
  readonly name: string
  readonly priority: number
  readonly ttftMs: number | null
  readonly tpotMs: number | null
  readonly e2eMs: number | null
  readonly attainmentTarget: number
  readonly maxKvUsage: number
}

export interface DashboardQueue {
  readonly pool: string
  readonly class: string
  readonly queued: number
  readonly inflight: number
  readonly oldestWaitMs: number
}

export interface DashboardEstimator {
  readonly pool: string
  readonly samples: number
  readonly meanAbsRelativeError: number | null
  readonly meanRelativeError: number | null
}

export interface DashboardBackend {
  readonly pool: string
  readonly name: string
  /** The endpoint's status in /admin/state (`ready`, `stale`, `ejected`, ...). */
  readonly status: string
  readonly usable: boolean
  /** The last scrape of its /metrics succeeded. */
  readonly up: boolean
  /** Taken out by the circuit breaker (open or half-open). */
  readonly ejected: boolean
  /** The engine's own figures from its last scrape (null before one). */
  readonly kvUsage: number | null
  readonly waiting: number | null
  readonly running: number | null
  /** Age of the load figures: since the last successful scrape (null before one). */
  readonly scrapeAgeMs: number | null
}

export interface DashboardData {
  readonly version: number
  /** How often the page asks again (ms). */
  readonly refreshMs: number
  readonly draining: boolean
  readonly inflight: number
  readonly classes: DashboardClass[]
  /** False when telemetry is off: windows, series, scatter and tenants are then empty. */
  readonly telemetry: boolean
  readonly windows: TelemetryHistory['windows']
  readonly series: TelemetryHistory['series']
  readonly scatter: TelemetryHistory['scatter']
  readonly tenants: TelemetryHistory['tenants']
  readonly queues: DashboardQueue[]
  readonly estimator: DashboardEstimator[]
  readonly backends: DashboardBackend[]
}

export interface DashboardSources {
  readonly classes: Readonly<Record<string, ClassConfig>>
  readonly draining: boolean
  readonly inflight: number
  /** `/admin/state`'s `backends` and `admission` sections, as they are built for it. */
  readonly backends: unknown
  readonly admission: unknown
  readonly history: TelemetryHistory | undefined
  readonly refreshMs: number
}

const rec = (v: unknown): Record<string, unknown> => (isRecord(v) ? v : {})
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback)

function classesOf(classes: Readonly<Record<string, ClassConfig>>): DashboardClass[] {
  return Object.entries(classes)
    .map(([name, c]) => ({
      name,
      priority: c.priority,
      ttftMs: c.slo.ttft_ms ?? null,
      tpotMs: c.slo.tpot_ms ?? null,
      e2eMs: c.slo.e2e_ms ?? null,
      attainmentTarget: c.attainment_target,
      maxKvUsage: c.max_kv_usage,
    }))
    .sort((a, b) => a.priority - b.priority || a.name.localeCompare(b.name))
}

function queuesOf(admission: unknown): [DashboardQueue[], DashboardEstimator[]] {
  const queues: DashboardQueue[] = []
  const estimator: DashboardEstimator[] = []
  for (const p of list(rec(admission).pools)) {
    const pool = str(rec(p).pool)
    for (const [cls, q] of Object.entries(rec(rec(p).classes))) {
      const r = rec(q)
      queues.push({
        pool,
        class: cls,
        queued: num(r.queued) ?? 0,
        inflight: num(r.inflight) ?? 0,
        oldestWaitMs: num(r.oldestWaitMs) ?? 0,
      })
    }
    const e = rec(rec(p).estimator)
    const samples = num(e.samples) ?? 0
    estimator.push({
      pool,
      samples,
      meanAbsRelativeError: samples > 0 ? num(e.meanAbsRelativeError) : null,
      meanRelativeError: samples > 0 ? num(e.meanRelativeError) : null,
    })
  }
  return [queues, estimator]
}

function backendsOf(backends: unknown): DashboardBackend[] {
  const out: DashboardBackend[] = []
  for (const p of list(rec(backends).pools)) {
    const pool = str(rec(p).name)
    for (const e of list(rec(p).endpoints)) {
      const r = rec(e)
      const load = rec(r.load)
      const scrape = rec(r.scrape)
      const age = num(rec(r.freshness).ageMs)
      out.push({
        pool,
        name: str(r.name),
        status: str(r.status, 'unknown'),
        usable: r.usable === true,
        up: scrape.up === true,
        ejected: str(rec(r.breaker).state, 'closed') !== 'closed',
        kvUsage: num(load.kvUsage),
        waiting: num(load.waiting),
        running: num(load.running),
        scrapeAgeMs: age === null ? null : Math.round(age),
      })
    }
  }
  return out
}

export function dashboardData(src: DashboardSources): DashboardData {
  const [queues, estimator] = queuesOf(src.admission)
  const h = src.history
  return {
    version: DASHBOARD_DATA_VERSION,
    refreshMs: src.refreshMs,
    draining: src.draining,
    inflight: src.inflight,
    classes: classesOf(src.classes),
    telemetry: h !== undefined,
    windows: h?.windows ?? {},
    series: h?.series ?? {},
    scatter: h?.scatter ?? {},
    tenants: h?.tenants ?? [],
    queues,
    estimator,
    backends: backendsOf(src.backends),
  }
}
