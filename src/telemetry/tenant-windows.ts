/**
 * Tokens and cost per tenant over the last 5 minutes (a ring of 5-second slots per
 * tenant, as rolling-windows.ts keeps per class), for cost per 1K tokens per tenant on
 * the dashboard. Tenants are the labelled ones (tenant-labels.ts bounds them; an evicted
 * tenant's slots are dropped), so memory is bounded by telemetry.tenant_label_limit.
 */
import { SLOT_MS } from './rolling-windows.js'

const SLOTS = 60

class TenantRing {
  readonly index = new Float64Array(SLOTS).fill(-1)
  readonly tokens = new Float64Array(SLOTS)
  readonly cost = new Float64Array(SLOTS)

  at(now: number): number {
    const index = Math.floor(now / SLOT_MS)
    const i = ((index % SLOTS) + SLOTS) % SLOTS
    if (this.index[i] !== index) {
      this.index[i] = index
      this.tokens[i] = 0
      this.cost[i] = 0
    }
    return i
  }
}

export interface TenantCost {
  readonly tenant: string
  /** Prompt + completion tokens of the tenant's requests in the window. */
  readonly tokens: number
  /** Cost attributed to the tenant in the window (cost reaches it when its interval closes). */
  readonly cost: number
  readonly costPer1kTokens: number | null
}

export class TenantWindows {
  private readonly byTenant = new Map<string, TenantRing>()

  private ring(tenant: string): TenantRing {
    let r = this.byTenant.get(tenant)
    if (r === undefined) {
      r = new TenantRing()
      this.byTenant.set(tenant, r)
    }
    return r
  }

  addTokens(now: number, tenant: string, tokens: number): void {
    if (!(tokens > 0)) return
    const r = this.ring(tenant)
    r.tokens[r.at(now)]! += tokens
  }

  addCost(now: number, tenant: string, amount: number): void {
    if (!(amount > 0)) return
    const r = this.ring(tenant)
    r.cost[r.at(now)]! += amount
  }

  evict(tenants: readonly string[]): void {
    for (const t of tenants) this.byTenant.delete(t)
  }

  /** The last 5 minutes per tenant, those with neither tokens nor cost left out, by cost. */
  stats(now: number): TenantCost[] {
    const current = Math.floor(now / SLOT_MS)
    const oldest = current - SLOTS + 1
    const out: TenantCost[] = []
    for (const [tenant, r] of this.byTenant) {
      let tokens = 0
      let cost = 0
      for (let i = 0; i < SLOTS; i++) {
        const index = r.index[i]!
        if (index < oldest || index > current) continue
        tokens += r.tokens[i]!
        cost += r.cost[i]!
      }
      if (tokens === 0 && cost === 0) continue
      out.push({ tenant, tokens, cost, costPer1kTokens: tokens > 0 ? cost / (tokens / 1000) : null })
    }
    return out.sort((a, b) => b.cost - a.cost || a.tenant.localeCompare(b.tenant))
  }
}
