/**
 * The tenant limiter: one interface, two stores (memory for one replica, Redis for a
 * fleet), chosen by name (limiter-registry.ts). The limits stage calls `check` once per
 * request before admission, and `settle` once when the request ends.
 *
 * Contract, for every store:
 *
 * - `check` does ALL of one request's checks in one call (one Redis round trip), and either
 *   admits the request, charging every limit at once, or refuses it, charging nothing:
 *   - `rpm`: GCRA. The emission interval is 60 000 / rpm ms and the burst is the whole limit:
 *     a tenant at rest may send `rpm` requests at once, then one every 60 000 / rpm ms. Over
 *     any span of D ms from rest, at most rpm + D · rpm / 60 000 requests are admitted.
 *   - `tpm`: a token bucket of `tpm` tokens refilled continuously at tpm per minute (prompt
 *     plus completion tokens). Admission RESERVES `reserveTokens` (the caller's estimate of
 *     the prompt + min(max_tokens, a cap)); it needs min(reserveTokens, tpm) tokens in the
 *     bucket, so a reservation larger than the whole bucket is admitted when the bucket is
 *     full and leaves it in debt. `settle` refunds or charges the difference between the
 *     reservation and the real usage; a charge may leave the bucket in debt. So the bucket is
 *     never overdrawn by more than one request's reservation (or its overrun of it).
 *   - `max_concurrent`: a lease per admitted request, held until `settle` or its expiry
 *     (`leaseMs`, default DEFAULT_LEASE_MS, renewed by `renew`), so a crashed replica's
 *     slots free themselves. A caller with long streams sets `leaseMs` to the request's own
 *     timeout, or calls `renew` while it streams.
 *   - `daily_tokens`: tokens charged in the current UTC day (reservations at admission,
 *     reconciled by `settle`). Admitted while the day's charge is under the budget (so it is
 *     overshot by at most one reservation); refused with `budgetSpent: true` otherwise.
 * - A refusal names the first refusing limit in the order daily_tokens, max_concurrent, rpm,
 *   tpm, and `retryAfterMs` is when every refusing limit would admit it: from the GCRA and
 *   the bucket's refill (not a fixed window), the next UTC midnight for the budget, and for
 *   concurrency, which ends with some other request, the sooner of the next lease expiry and
 *   CONCURRENCY_RETRY_MS.
 * - `requests` and `tokens` (present when `rpm` / `tpm` is set) carry what OpenAI's
 *   x-ratelimit-* headers need, after this request's charge when it is admitted.
 * - `check` is idempotent by requestId while the request is admitted and not settled: a
 *   second check of the same id admits it again without charging twice.
 * - `settle` runs exactly once per admitted request: by requestId, a second settle (or one for
 *   a request never admitted, or whose lease expired) changes nothing and returns settled:
 *   false. Time is the store's own: the memory store's clock, Redis's `TIME` (never the
 *   gateway's clock), so replicas on skewed clocks share one timeline.
 * - A store that cannot answer (Redis down, slow) rejects with a LimiterStoreError (stable
 *   `code`) within its timeout; it never hangs. The caller applies fail-open or fail-closed.
 */

/** A tenant's limits, as the config names them; an absent limit is not enforced. */
export interface TenantLimits {
  /** Requests per minute (GCRA). */
  readonly rpm?: number | undefined
  /** Tokens per minute, prompt plus completion (token bucket with reservations). */
  readonly tpm?: number | undefined
  /** Requests in flight at once (leases with an expiry). */
  readonly max_concurrent?: number | undefined
  /** Tokens per UTC day. */
  readonly daily_tokens?: number | undefined
}

export type LimitName = 'rpm' | 'tpm' | 'max_concurrent' | 'daily_tokens'

export interface CheckRequest {
  readonly tenant: string
  /** Unique per request; `settle` and `renew` name the request by it. */
  readonly requestId: string
  readonly limits: TenantLimits
  /** Tokens reserved at admission (prompt + min(max_tokens, cap)); rounded up, 0 if not positive. */
  readonly reserveTokens: number
  /** The concurrency lease's (and the reservation's) life, ms; DEFAULT_LEASE_MS when absent. */
  readonly leaseMs?: number | undefined
}

/** One limit's state, for the x-ratelimit-{limit,remaining,reset}-{requests,tokens} headers. */
export interface LimitState {
  readonly limit: number
  /** Whole requests (or tokens) that could be admitted now, never negative. */
  readonly remaining: number
  /** Ms until the limit is back to its initial state (full). */
  readonly resetMs: number
}

interface DecisionCommon {
  /** Present when the tenant has an `rpm` limit. */
  readonly requests?: LimitState | undefined
  /** Present when the tenant has a `tpm` limit. */
  readonly tokens?: LimitState | undefined
}

export interface Admitted extends DecisionCommon {
  readonly allowed: true
}

export interface Refused extends DecisionCommon {
  readonly allowed: false
  readonly refusedBy: LimitName
  /** Ms until every refusing limit would admit this request; at least 1. */
  readonly retryAfterMs: number
  /** The day's token budget is spent: retrying today will not help (x-should-retry: false). */
  readonly budgetSpent: boolean
}

export type LimitDecision = Admitted | Refused

export interface SettleRequest {
  readonly tenant: string
  readonly requestId: string
  readonly limits: TenantLimits
  /** The real usage (prompt + completion tokens from `usage`, or the gateway's count). */
  readonly usedTokens: number
}

export interface SettleResult {
  /** False when there was nothing to settle: already settled, never admitted, or expired. */
  readonly settled: boolean
  /** The token bucket after reconciliation, when the tenant has a `tpm` limit. */
  readonly tokens?: LimitState | undefined
}

export interface RenewRequest {
  readonly tenant: string
  readonly requestId: string
  /** The new life from now, ms; DEFAULT_LEASE_MS when absent. */
  readonly leaseMs?: number | undefined
}

/** A tenant's current usage, for /admin/state: read without charging anything. */
export interface TenantUsage {
  /** Present when the tenant has an `rpm` limit. */
  readonly requests?: LimitState | undefined
  /** Present when the tenant has a `tpm` limit. */
  readonly tokens?: LimitState | undefined
  /** Concurrency leases held (requests in flight, fleet-wide for a shared store). */
  readonly concurrent: number
  /** Tokens charged in the current UTC day. */
  readonly dailyTokens: number
}

export interface Limiter {
  /** The store's registry name (`memory`, `redis`). */
  readonly name: string
  check(req: CheckRequest): Promise<LimitDecision>
  /**
   * check, answered at once, for a store that needs no I/O (memory): the limits stage then
   * decides in the same tick as the stages around it, with no promise per request.
   */
  checkNow?(req: CheckRequest): LimitDecision
  /** Reconciles the reservation with the real usage and releases the lease, once per request. */
  settle(req: SettleRequest): Promise<SettleResult>
  /** settle, at once (the store of checkNow). */
  settleNow?(req: SettleRequest): SettleResult
  /** Extends an admitted request's lease and reservation; false when it is not held any more. */
  renew(req: RenewRequest): Promise<boolean>
  /** What the tenant has used of its limits now; charges nothing. */
  usage(tenant: string, limits: TenantLimits): Promise<TenantUsage>
  /** For /admin/state, when the store has more to say than its name (health, replicas). */
  describe?(): object
  /** Releases the store's resources (the Redis connection). */
  close(): Promise<void>
}

/** A lease's life when the caller names none: long enough for most streams, short enough to heal. */
export const DEFAULT_LEASE_MS = 120_000

/** The retry hint for a concurrency refusal, when no lease expires sooner. */
export const CONCURRENCY_RETRY_MS = 1_000

export const DAY_MS = 86_400_000

/** A token count as the stores charge it: a whole number of tokens, 0 for anything not positive. */
export function tokenCount(n: number): number {
  return Number.isFinite(n) && n > 0 ? Math.ceil(n) : 0
}

/** A lease's life as the stores apply it: whole ms, at least 1, DEFAULT_LEASE_MS when absent. */
export function leaseLife(ms: number | undefined): number {
  return ms !== undefined && Number.isFinite(ms) && ms >= 1 ? Math.ceil(ms) : DEFAULT_LEASE_MS
}
