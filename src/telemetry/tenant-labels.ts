/**
 * The tenant label's cardinality cap: at most `limit` tenants carry their own name as the
 * `tenant` label, chosen by traffic; every other tenant is labelled `other`.
 *
 * Method:
 * - Traffic (requests) is counted in a Space-Saving summary of `4 x limit` entries
 *   (at least 64), so memory stays bounded however many tenants there are, and the heavy
 *   hitters' counts are kept (over-estimated by at most the smallest count in the table).
 * - Until `limit` tenants hold a label, a new tenant gets one at once (small deployments
 *   never see `other`).
 * - Every `rebalanceMs` (checked lazily on the gateway clock) the labelled set becomes the
 *   top `limit` tenants by count, incumbents weighted 1.25x so that two tenants of similar
 *   traffic do not swap labels every period. Tenants that lose their label are reported to
 *   `onEvict`, which removes their series, so at any moment at most `limit` tenant names
 *   (plus `other`) are exported. Counts are then halved: traffic is measured with a
 *   half-life of one period.
 * A tenant's label can thus change over time; sums over `tenant` stay exact.
 */
import { OTHER } from './bounded-label.js'

interface Counted {
  count: number
}

const INCUMBENT_WEIGHT = 1.25

export class TenantLabels {
  private readonly limit: number
  private readonly capacity: number
  private readonly rebalanceMs: number
  private readonly counts = new Map<string, Counted>()
  private readonly labelled = new Set<string>()
  private nextRebalance: number
  private readonly onEvict: (tenants: readonly string[]) => void

  constructor(opts: {
    limit: number
    rebalanceMs: number
    now: number
    onEvict?: (tenants: readonly string[]) => void
  }) {
    this.limit = opts.limit
    this.capacity = Math.max(64, 4 * opts.limit)
    this.rebalanceMs = opts.rebalanceMs
    this.nextRebalance = opts.now + opts.rebalanceMs
    this.onEvict = opts.onEvict ?? (() => {})
  }

  /** Count one request of `tenant` at `now` and return its label value. */
  observe(tenant: string, now: number): string {
    if (now >= this.nextRebalance) this.rebalance(now)
    this.count(tenant)
    if (this.labelled.has(tenant)) return tenant
    if (this.labelled.size < this.limit && tenant !== OTHER) {
      this.labelled.add(tenant)
      return tenant
    }
    return OTHER
  }

  /** The current label of `tenant` (no counting). */
  current(tenant: string): string {
    return this.labelled.has(tenant) ? tenant : OTHER
  }

  /** Tenants that carry their own label now. */
  labelledTenants(): string[] {
    return [...this.labelled]
  }

  /** Re-choose the labelled set now (normally done lazily every `rebalanceMs`). */
  rebalance(now: number): void {
    this.nextRebalance = now + this.rebalanceMs
    const ranked = [...this.counts.entries()]
      .filter(([t]) => t !== OTHER)
      .map(([t, c]) => ({ t, score: c.count * (this.labelled.has(t) ? INCUMBENT_WEIGHT : 1) }))
      .sort((a, b) => b.score - a.score || (a.t < b.t ? -1 : a.t > b.t ? 1 : 0))
    const next = new Set(ranked.slice(0, this.limit).map((r) => r.t))
    const evicted: string[] = []
    for (const t of this.labelled) if (!next.has(t)) evicted.push(t)
    this.labelled.clear()
    for (const t of next) this.labelled.add(t)
    for (const [t, c] of this.counts) {
      c.count /= 2
      if (c.count < 0.01) this.counts.delete(t)
    }
    if (evicted.length > 0) this.onEvict(evicted)
  }

  /** Space-Saving update: O(1) for a tracked tenant, O(capacity) for a new one when full. */
  private count(tenant: string): void {
    const c = this.counts.get(tenant)
    if (c !== undefined) {
      c.count++
      return
    }
    if (this.counts.size < this.capacity) {
      this.counts.set(tenant, { count: 1 })
      return
    }
    let minKey: string | undefined
    let min = Number.POSITIVE_INFINITY
    for (const [k, v] of this.counts) {
      if (v.count < min) {
        min = v.count
        minKey = k
      }
    }
    if (minKey !== undefined) this.counts.delete(minKey)
    this.counts.set(tenant, { count: min + 1 })
  }
}
