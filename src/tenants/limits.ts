/**
 * Stage limits: the tenant's own quotas (requests, tokens, concurrency, a daily budget),
 * checked in one limiter call before admission spends any capacity on the request, and
 * settled once when the request ends.
 *
 * - A tenant without limits skips the limiter: nothing is awaited, nothing allocated.
 * - Admitted: the decision's states go on the ticket (forward sends them as OpenAI's
 *   x-ratelimit-* headers) and the request reserves prompt tokens + min(expected output,
 *   `limits.reserve_output_cap`).
 * - Refused: 429 GW_ERR_RATE_LIMITED with the x-ratelimit-* headers and retry-after(-ms)
 *   from when the refusing limit admits again, or GW_ERR_BUDGET_EXHAUSTED (x-should-retry:
 *   false) when the day's token budget is spent.
 * - The store cannot answer: the limiter itself applies `limits.on_store_error` (failover.ts:
 *   this replica's share of each limit); what still fails here is a LimiterStoreError under
 *   `fail_closed`, a 503 GW_ERR_LIMITER_UNAVAILABLE, or a bug, let through unlimited (logged)
 *   rather than fail the request.
 * - While a limited request is in flight its concurrency lease is renewed every
 *   `limits.lease_ms` / 3, so a long stream keeps its slot and a dead replica's slots
 *   expire within `lease_ms` (one timer for all of them, running only while any is in flight).
 * - When the request ends (however: done, refused later by admission, client gone, failed),
 *   one settle charges what it used (settleTokens) and frees its concurrency lease.
 */
import { randomUUID } from 'node:crypto'
import { DEFAULTS } from '../config/schema.js'
import { GatewayError } from '../errors.js'
import type { ExchangeObserver } from '../exchange.js'
import type { GatewayRequest, Stage, StageDeps, StageResult } from '../gateway-request.js'
import { ENDED } from '../gateway-request.js'
import { SlotMap, type Slotted } from '../slot-map.js'
import type { Ticket } from '../ticket.js'
import type { Tenant, TenantDirectory } from './directory.js'
import type { LimitDecision, Limiter, TenantLimits } from './limiter.js'
import { LimiterStoreError } from './limiter-errors.js'
import { rateLimitHeaders } from './ratelimit-headers.js'

/** A fail-closed store error's retry hint: about the time the store takes to reconnect. */
const STORE_RETRY_MS = 1_000

/** Whether the tenant has a limit to enforce (one or more). */
export function hasLimits(l: TenantLimits): boolean {
  return (
    l.rpm !== undefined ||
    l.tpm !== undefined ||
    l.max_concurrent !== undefined ||
    l.daily_tokens !== undefined
  )
}

/**
 * The tokens a finished request is charged: its real usage (prompt + completion) when the
 * server reported it; else nothing when it was never sent (refused by admission, client gone
 * while queued); else, for a stream, its prompt estimate plus the content chunks relayed
 * (about one token each); else the reservation (the server did the work, we cannot see how much).
 */
export function settleTokens(t: Ticket): number {
  if (t.usage !== undefined) return t.usage.promptTokens + t.usage.completionTokens
  if (t.dispatchedAt === undefined) return 0
  if (t.stream) return t.promptTokens + t.contentChunks
  return t.limiterLease?.reserved ?? 0
}

/** What the tenant limiter holds for one request it admitted, from its check to its settle. */
export interface LimiterLease extends Slotted {
  /** The id the limiter knows the request by (unique per process run). */
  readonly id: string
  /** The tenant as the limiter admitted it (settled against these limits even after a reload). */
  readonly tenant: Tenant
  /** Tokens reserved for the request (tpm, daily_tokens). */
  readonly reserved: number
}

/**
 * /admin/state's tenants: the directory's listing, and what each limited tenant has used
 * of its limits now (fleet-wide with the Redis store; an error string when it cannot answer).
 */
export async function tenantsState(dir: TenantDirectory, limiter: Limiter | undefined): Promise<object> {
  const limited = dir.all().filter((t) => hasLimits(t.limits))
  const usage = await Promise.all(
    limited.map(async (t) => {
      if (limiter === undefined) return [t.id, null] as const
      try {
        return [t.id, await limiter.usage(t.id, t.limits)] as const
      } catch (err) {
        return [t.id, { error: err instanceof Error ? err.message : String(err) }] as const
      }
    }),
  )
  const store = limiter?.describe?.() ?? { store: limiter?.name ?? null }
  return { ...dir.state(), limiter: store, usage: Object.fromEntries(usage) }
}

/** The refusal for a decision that refused. */
function refusal(tenant: string, d: Extract<LimitDecision, { allowed: false }>): GatewayError {
  const headers = rateLimitHeaders(d.requests, d.tokens)
  if (d.budgetSpent) return new GatewayError('GW_ERR_BUDGET_EXHAUSTED', { tenant }, { headers })
  return new GatewayError(
    'GW_ERR_RATE_LIMITED',
    { tenant, limit: d.refusedBy, retryAfterMs: d.retryAfterMs },
    { headers, retryAfterMs: d.retryAfterMs },
  )
}

export function limitsStage(deps: StageDeps): Stage {
  const limiter: Limiter | undefined = deps.limiter
  if (limiter === undefined) return () => undefined
  const cap = deps.limits?.reserve_output_cap ?? DEFAULTS.reserveOutputCap
  const leaseMs = deps.limits?.lease_ms ?? DEFAULTS.limitLeaseMs
  const logger = deps.logger
  // request ids come from clients (x-request-id) and may repeat: the limiter gets its own
  const run = randomUUID()
  let seq = 0
  // the leases of the limited requests in flight: renewed while they last (a SlotMap, not a
  // Map by id: see src/slot-map.ts)
  const held = new SlotMap<LimiterLease, LimiterLease>()
  let renewer: NodeJS.Timeout | undefined
  const renewAll = () => {
    for (const lease of held.values()) {
      const tenant = lease.tenant.id
      limiter
        .renew({ tenant, requestId: lease.id, leaseMs })
        .catch((err: unknown) => logger?.warn({ err, tenant }, 'tenant limiter lease renewal failed'))
    }
  }
  const hold = (lease: LimiterLease) => {
    held.set(lease, lease)
    if (renewer === undefined) {
      renewer = setInterval(renewAll, Math.max(1, Math.floor(leaseMs / 3)))
      renewer.unref()
    }
  }
  const release = (lease: LimiterLease) => {
    held.delete(lease)
    if (held.size === 0 && renewer !== undefined) {
      clearInterval(renewer)
      renewer = undefined
    }
  }

  const settle = (t: Ticket): void => {
    const lease = t.limiterLease
    if (lease === undefined) return
    release(lease)
    const tenant = lease.tenant
    const req = { tenant: tenant.id, requestId: lease.id, limits: tenant.limits, usedTokens: settleTokens(t) }
    if (limiter.settleNow === undefined) {
      limiter.settle(req).catch((err: unknown) => settleFailed(t, err))
      return
    }
    try {
      limiter.settleNow(req)
    } catch (err) {
      settleFailed(t, err)
    }
  }
  const settleFailed = (t: Ticket, err: unknown) =>
    logger?.warn({ err, reqId: t.id, tenant: t.tenant }, 'tenant limiter settle failed')
  // one observer for every limited request, made once
  const settler: ExchangeObserver = { ended: settle }

  const decided = (r: GatewayRequest, d: LimitDecision): StageResult => {
    const t = r.ticket
    if (!d.allowed) return refusal(t.tenant, d)
    t.rateRequests = d.requests
    t.rateTokens = d.tokens
    // the client left while the limiter answered: nothing will end this exchange again
    if (r.exchange.isEnded) {
      settle(t)
      return ENDED
    }
    r.exchange.observe(settler)
    // the lease carries the reservation too: renewed for every limited request, not just concurrency
    hold(t.limiterLease!)
    return undefined
  }

  /** The limiter's answer, or its failure: the request's lease, or the refusal. */
  const answered = (r: GatewayRequest, tenant: Tenant, id: string, reserve: number, d: LimitDecision) => {
    if (d.allowed) r.ticket.limiterLease = { slot: -1, id, tenant, reserved: reserve }
    return decided(r, d)
  }
  const failed = (r: GatewayRequest, tenant: Tenant, err: unknown): StageResult => {
    if (err instanceof LimiterStoreError) {
      // the limiter's policy is fail_closed (a fail_open one answers from its local share)
      return new GatewayError('GW_ERR_LIMITER_UNAVAILABLE', {}, { cause: err, retryAfterMs: STORE_RETRY_MS })
    }
    // a bug: the tenant's quota is not worth failing its request over
    logger?.warn(
      { err, reqId: r.ticket.id, tenant: tenant.id },
      'tenant limiter failed; request let through unlimited',
    )
    return undefined
  }

  return (r) => {
    const t = r.ticket
    const tenant = deps.tenants.get(t.tenant)
    if (tenant === undefined || !hasLimits(tenant.limits)) return undefined
    const reserve = t.promptTokens + Math.min(t.expectedOutputTokens, cap)
    const requestId = `${run}:${++seq}`
    const req = { tenant: tenant.id, requestId, limits: tenant.limits, reserveTokens: reserve, leaseMs }
    // a store that needs no I/O answers at once: no promise, the next stage in the same tick
    if (limiter.checkNow !== undefined) {
      let d: LimitDecision
      try {
        d = limiter.checkNow(req)
      } catch (err) {
        return failed(r, tenant, err)
      }
      return answered(r, tenant, requestId, reserve, d)
    }
    return limiter.check(req).then(
      (d) => answered(r, tenant, requestId, reserve, d),
      (err: unknown) => failed(r, tenant, err),
    )
  }
}
