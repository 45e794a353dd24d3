/**
 * Metrics derived from the backends' load state (src/backends): the engines' own
 * monotonic counters (preemptions, prefix-cache queries and hits) re-exported per
 * endpoint (label `backend`, the endpoint's name, as the backends module labels its own
 * metrics), and a fixed-interval sampler of the running batch (its size distribution and
 * the busy time, whose rate is the busy fraction).
 *
 * Counters follow the engine's value: the first value seen is taken whole, later
 * increases are added, and a decrease (the engine restarted) adds the new value, so the
 * gateway's counter never goes down. Endpoints that disappear lose their series.
 * Sampling reads only fresh loads (scraped within the pool's `stale_after_ms`).
 */
import type { BackendLoad, Backends } from '../backends/types.js'
import type { Metrics } from './metrics.js'
import { SeriesCache } from './series-cache.js'

type Counted = 'preemptionsTotal' | 'prefixCacheQueriesTotal' | 'prefixCacheHitsTotal'

interface Seen {
  pool: string
  endpoint: string
  last: Partial<Record<Counted, number>>
  alive: boolean
}

const SEP = '\u0001'

export class BackendMetrics {
  private readonly backends: Backends
  private readonly intervalMs: number
  private readonly seen = new Map<string, Seen>()
  private lastSample: number | undefined
  private readonly counters: Record<Counted, SeriesCache<'pool' | 'backend', { inc(v?: number): void }>>
  private readonly busy: SeriesCache<'pool' | 'backend', { inc(v?: number): void }>
  private readonly batch: SeriesCache<'pool', { observe(v: number): void }>

  constructor(backends: Backends, metrics: Metrics, intervalMs: number) {
    this.backends = backends
    this.intervalMs = intervalMs
    const pe = ['pool', 'backend'] as const
    this.counters = {
      preemptionsTotal: new SeriesCache(metrics.backendPreemptions, pe),
      prefixCacheQueriesTotal: new SeriesCache(metrics.backendPrefixQueries, pe),
      prefixCacheHitsTotal: new SeriesCache(metrics.backendPrefixHits, pe),
    }
    this.busy = new SeriesCache(metrics.backendBusy, pe)
    this.batch = new SeriesCache(metrics.backendBatchSize, ['pool'])
  }

  /** Bring the re-exported counters up to the latest loads (called at scrape time). */
  sync(): void {
    for (const s of this.seen.values()) s.alive = false
    for (const pool of this.backends.pools()) {
      for (const ep of pool.endpoints()) {
        const key = pool.name + SEP + ep.name
        let s = this.seen.get(key)
        if (s === undefined) {
          s = { pool: pool.name, endpoint: ep.name, last: {}, alive: true }
          this.seen.set(key, s)
        }
        s.alive = true
        if (ep.load !== undefined) this.follow(s, ep.load)
      }
    }
    for (const [key, s] of this.seen) {
      if (s.alive) continue
      this.seen.delete(key)
      for (const c of [...Object.values(this.counters), this.busy]) c.removeWhere('backend', s.endpoint)
    }
  }

  private follow(s: Seen, load: BackendLoad): void {
    for (const field of Object.keys(this.counters) as Counted[]) {
      const v = load[field]
      if (v === undefined || !Number.isFinite(v) || v < 0) continue
      const last = s.last[field]
      const delta = last === undefined || v < last ? v : v - last
      s.last[field] = v
      this.counters[field].get([s.pool, s.endpoint]).inc(delta)
    }
  }

  /**
   * Sample the running batches if `intervalMs` has passed since the last sample. Each fresh
   * endpoint observes its running count; one with a non-empty batch is counted busy for
   * the time since the previous sample.
   */
  sample(now: number): void {
    if (this.lastSample !== undefined && now - this.lastSample < this.intervalMs) return
    const elapsedS = this.lastSample === undefined ? 0 : (now - this.lastSample) / 1000
    this.lastSample = now
    for (const pool of this.backends.pools()) {
      for (const ep of pool.endpoints()) {
        const load = ep.load
        if (load === undefined || ep.loadAt === undefined || now - ep.loadAt > pool.config.stale_after_ms)
          continue
        this.batch.get([pool.name]).observe(load.running)
        this.busy.get([pool.name, ep.name]).inc(load.running > 0 ? elapsedS : 0)
      }
    }
  }

  /** Whether any endpoint of `pool` reports a non-empty running batch. */
  running(pool: string): boolean {
    for (const p of this.backends.pools()) {
      if (p.name !== pool) continue
      for (const ep of p.endpoints()) if ((ep.load?.running ?? 0) > 0) return true
    }
    return false
  }
}
