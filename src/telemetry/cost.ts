/**
 * Cost attribution: what the model servers cost, split among tenants by their tokens.
 *
 * Method (documented in docs/metrics.md):
 * - Time is cut into intervals of `intervalMs` on the gateway clock. An interval is closed
 *   lazily, by the first `tick()` at or after its end (ticks come with every recorded
 *   request, every scrape and a timer); a tick that finds several intervals elapsed closes
 *   them as one span.
 * - A pool costs `cost_per_hour x endpoints x span / 1 h` over a closed span (endpoints
 *   counted at the close).
 * - That cost is split among the (class, tenant) pairs in proportion to the tokens
 *   (prompt + completion) of their requests to that pool that finished in the span.
 * - A span with no finished tokens on a pool: if the pool is busy (requests in flight),
 *   its cost is carried to the next span that has tokens (long requests pay for the time
 *   they ran); if idle, it is booked to class and tenant `_idle`, so that the sum of
 *   cost_total is always the whole bill.
 */

export const IDLE = '_idle'

export interface PoolCost {
  readonly name: string
  /** Cost of one endpoint per hour (config `backends.pools[].cost_per_hour`). */
  readonly costPerHour: number
  readonly endpoints: number
  /** Whether the pool has requests in flight now. */
  readonly busy: boolean
}

export interface CostShare {
  readonly pool: string
  readonly class: string
  readonly tenant: string
  readonly amount: number
}

interface Pending {
  readonly class: string
  readonly tenant: string
  tokens: number
}

/** One pool's tokens of the open interval: pairs in order of first booking, and an index. */
interface PoolPending {
  readonly list: Pending[]
  /** class -> tenant -> its Pending (no key string built per request). */
  readonly byClass: Map<string, Map<string, Pending>>
}

const HOUR_MS = 3_600_000

export class CostAttributor {
  private readonly intervalMs: number
  private readonly start: number
  private lastClose: number
  private readonly pools: () => Iterable<PoolCost>
  private readonly onShare: (share: CostShare, now: number) => void
  private readonly pending = new Map<string, PoolPending>()
  private readonly carry = new Map<string, number>()

  constructor(opts: {
    intervalMs: number
    now: number
    pools: () => Iterable<PoolCost>
    onShare: (share: CostShare, now: number) => void
  }) {
    this.intervalMs = opts.intervalMs
    this.start = opts.now
    this.lastClose = opts.now
    this.pools = opts.pools
    this.onShare = opts.onShare
  }

  /** Book `tokens` of a finished request to its pool, class and tenant (label values). */
  addTokens(now: number, pool: string, cls: string, tenant: string, tokens: number): void {
    this.tick(now)
    if (!(tokens > 0)) return
    let pp = this.pending.get(pool)
    if (pp === undefined) {
      pp = { list: [], byClass: new Map() }
      this.pending.set(pool, pp)
    }
    let byTenant = pp.byClass.get(cls)
    if (byTenant === undefined) {
      byTenant = new Map()
      pp.byClass.set(cls, byTenant)
    }
    const p = byTenant.get(tenant)
    if (p === undefined) {
      const added = { class: cls, tenant, tokens }
      byTenant.set(tenant, added)
      pp.list.push(added)
    } else p.tokens += tokens
  }

  /** Close every interval that ended at or before `now`. */
  tick(now: number): void {
    const boundary = this.start + Math.floor((now - this.start) / this.intervalMs) * this.intervalMs
    if (boundary <= this.lastClose) return
    const spanMs = boundary - this.lastClose
    this.lastClose = boundary
    for (const pool of this.pools()) {
      const cost = (pool.costPerHour * pool.endpoints * spanMs) / HOUR_MS + (this.carry.get(pool.name) ?? 0)
      this.carry.delete(pool.name)
      if (!(cost > 0)) continue
      const byKey = this.pending.get(pool.name)?.list
      let total = 0
      if (byKey !== undefined) for (const p of byKey) total += p.tokens
      if (byKey !== undefined && total > 0) {
        for (const p of byKey) {
          this.onShare(
            { pool: pool.name, class: p.class, tenant: p.tenant, amount: (cost * p.tokens) / total },
            now,
          )
        }
      } else if (pool.busy) {
        this.carry.set(pool.name, cost)
      } else {
        this.onShare({ pool: pool.name, class: IDLE, tenant: IDLE, amount: cost }, now)
      }
    }
    this.pending.clear()
  }

  /** Cost carried forward, per pool (for /admin/state). */
  carried(): Record<string, number> {
    return Object.fromEntries(this.carry)
  }
}
