/**
 * The memory limiter store: one replica's limits, in this process (the contract is on the
 * Limiter interface, limiter.ts). Every check is O(1) but for expired leases, which are
 * swept when the earliest one is due (each lease is swept once).
 *
 * Two clocks: `clock` (monotonic, ms) times the GCRA, the bucket and the leases; `wallClock`
 * (epoch ms) says which UTC day a daily budget is in. Tests pass one ManualClock as both.
 */
import { type Clock, systemClock } from '../clock.js'
import {
  type CheckRequest,
  CONCURRENCY_RETRY_MS,
  DAY_MS,
  type LimitDecision,
  type Limiter,
  type LimitName,
  type LimitState,
  leaseLife,
  type RenewRequest,
  type SettleRequest,
  type SettleResult,
  type TenantLimits,
  type TenantUsage,
  tokenCount,
} from './limiter.js'

export interface MemoryStoreOptions {
  readonly clock?: Clock | undefined
  readonly wallClock?: Clock | undefined
}

/** Float slack for comparisons of times and levels (ms, tokens). */
const EPS = 1e-6
const MINUTE_MS = 60_000

interface Lease {
  expiresAt: number
  readonly reserved: number
  /** The UTC day the reservation was charged to. */
  readonly day: number
}

interface TenantState {
  /** GCRA theoretical arrival time. */
  tat: number
  /** Token bucket level (may be negative: debt) at `tokensAt`; NaN = never used (full). */
  tokens: number
  tokensAt: number
  day: number
  dayUsed: number
  /** requestId -> its lease (and reservation), for every admitted request not settled. */
  readonly leases: Map<string, Lease>
  /** No lease expires before this (a lower bound; exact after a sweep). */
  minExpiry: number
}

const positive = (n: number | undefined): n is number => n !== undefined && n > 0

/** The limits' states an answer carries (rpm, tpm), where the tenant has those limits. */
interface LimitStates {
  requests?: LimitState
  tokens?: LimitState
}

/**
 * `into` with the limits as they stand: `requests` (rpm; not for `which` 'tokens') and
 * `tokens` (tpm), where the tenant has them. Set field by field: object spreads on every
 * check and settle cost a request copies (issue 18).
 */
function withStates<T extends object>(
  into: T,
  s: TenantState,
  L: TenantLimits,
  now: number,
  which: 'all' | 'tokens' = 'all',
): T & LimitStates {
  const out: T & LimitStates = into
  if (which === 'all' && positive(L.rpm)) out.requests = requestsState(L.rpm, s.tat, now)
  if (positive(L.tpm)) out.tokens = tokensState(L.tpm, bucketLevel(s, L.tpm, now))
  return out
}

/** The bucket's level at `now`, refilled from its last change. */
function bucketLevel(s: TenantState, tpm: number, now: number): number {
  if (Number.isNaN(s.tokens)) return tpm
  return Math.min(tpm, s.tokens + (Math.max(0, now - s.tokensAt) * tpm) / MINUTE_MS)
}

function requestsState(rpm: number, tat: number, now: number): LimitState {
  const interval = MINUTE_MS / rpm
  const ahead = Math.max(0, tat - now)
  return {
    limit: rpm,
    remaining: Math.max(0, Math.floor((MINUTE_MS - ahead) / interval + EPS)),
    resetMs: Math.ceil(ahead - EPS),
  }
}

function tokensState(tpm: number, level: number): LimitState {
  return {
    limit: tpm,
    remaining: Math.max(0, Math.floor(level + EPS)),
    resetMs: Math.max(0, Math.ceil(((tpm - level) * MINUTE_MS) / tpm - EPS)),
  }
}

export class MemoryStore implements Limiter {
  readonly name = 'memory'
  private readonly clock: Clock
  private readonly wallClock: Clock
  private readonly tenants = new Map<string, TenantState>()

  constructor(opts: MemoryStoreOptions = {}) {
    this.clock = opts.clock ?? systemClock
    this.wallClock = opts.wallClock ?? { now: () => Date.now() }
  }

  async check(req: CheckRequest): Promise<LimitDecision> {
    return this.checkNow(req)
  }

  /** check, answered at once: this store does no I/O. */
  checkNow(req: CheckRequest): LimitDecision {
    const now = this.clock.now()
    const s = this.state(req.tenant)
    const L = req.limits
    this.rollDay(s)
    this.sweep(s, now)

    if (s.leases.has(req.requestId)) return withStates({ allowed: true as const }, s, L, now)
    const reserve = tokenCount(req.reserveTokens)

    // Every limit is checked (a refusal's wait is when ALL of them would admit); the first refusing names it.
    let refusedBy: LimitName | undefined
    let wait = 0
    if (positive(L.daily_tokens) && s.dayUsed >= L.daily_tokens) {
      refusedBy = 'daily_tokens'
      wait = (s.day + 1) * DAY_MS - this.wallClock.now()
    }
    if (positive(L.max_concurrent) && s.leases.size >= L.max_concurrent) {
      refusedBy ??= 'max_concurrent'
      wait = Math.max(wait, Math.min(CONCURRENCY_RETRY_MS, s.minExpiry - now))
    }
    let newTat = s.tat
    if (positive(L.rpm)) {
      newTat = Math.max(s.tat, now) + MINUTE_MS / L.rpm
      const allowAt = newTat - MINUTE_MS
      if (allowAt > now + EPS) {
        refusedBy ??= 'rpm'
        wait = Math.max(wait, allowAt - now)
      }
    }
    let level = 0
    if (positive(L.tpm)) {
      level = bucketLevel(s, L.tpm, now)
      const need = Math.min(reserve, L.tpm)
      if (level + EPS < need) {
        refusedBy ??= 'tpm'
        wait = Math.max(wait, ((need - level) * MINUTE_MS) / L.tpm)
      }
    }

    if (refusedBy !== undefined) {
      const refused = {
        allowed: false as const,
        refusedBy,
        retryAfterMs: Math.max(1, Math.ceil(wait - EPS)),
        budgetSpent: refusedBy === 'daily_tokens',
      }
      return withStates(refused, s, L, now)
    }

    if (positive(L.rpm)) s.tat = newTat
    if (positive(L.tpm)) {
      s.tokens = level - reserve
      s.tokensAt = now
    }
    s.dayUsed += reserve
    const expiresAt = now + leaseLife(req.leaseMs)
    s.leases.set(req.requestId, { expiresAt, reserved: reserve, day: s.day })
    s.minExpiry = Math.min(s.minExpiry, expiresAt)
    return withStates({ allowed: true as const }, s, L, now)
  }

  async settle(req: SettleRequest): Promise<SettleResult> {
    return this.settleNow(req)
  }

  /** settle, at once. */
  settleNow(req: SettleRequest): SettleResult {
    const now = this.clock.now()
    const s = this.state(req.tenant)
    const L = req.limits
    this.rollDay(s)
    this.sweep(s, now)
    const lease = s.leases.get(req.requestId)
    if (lease === undefined) return withStates({ settled: false }, s, L, now, 'tokens')
    s.leases.delete(req.requestId)
    const diff = tokenCount(req.usedTokens) - lease.reserved
    if (positive(L.tpm)) {
      s.tokens = Math.min(L.tpm, bucketLevel(s, L.tpm, now) - diff)
      s.tokensAt = now
    }
    if (lease.day === s.day) s.dayUsed = Math.max(0, s.dayUsed + diff)
    return withStates({ settled: true }, s, L, now, 'tokens')
  }

  async renew(req: RenewRequest): Promise<boolean> {
    const now = this.clock.now()
    const s = this.state(req.tenant)
    this.sweep(s, now)
    const lease = s.leases.get(req.requestId)
    if (lease === undefined) return false
    lease.expiresAt = now + leaseLife(req.leaseMs)
    s.minExpiry = Math.min(s.minExpiry, lease.expiresAt)
    return true
  }

  async usage(tenant: string, limits: TenantLimits): Promise<TenantUsage> {
    const now = this.clock.now()
    const s = this.state(tenant)
    this.rollDay(s)
    this.sweep(s, now)
    return withStates({ concurrent: s.leases.size, dailyTokens: s.dayUsed }, s, limits, now)
  }

  async close(): Promise<void> {
    this.tenants.clear()
  }

  private state(tenant: string): TenantState {
    let s = this.tenants.get(tenant)
    if (s === undefined) {
      s = {
        tat: Number.NEGATIVE_INFINITY,
        tokens: Number.NaN,
        tokensAt: 0,
        day: Math.floor(this.wallClock.now() / DAY_MS),
        dayUsed: 0,
        leases: new Map(),
        minExpiry: Number.POSITIVE_INFINITY,
      }
      this.tenants.set(tenant, s)
    }
    return s
  }

  private rollDay(s: TenantState): void {
    const day = Math.floor(this.wallClock.now() / DAY_MS)
    if (day !== s.day) {
      s.day = day
      s.dayUsed = 0
    }
  }

  /** Drops the expired leases, when the earliest is due. */
  private sweep(s: TenantState, now: number): void {
    if (now < s.minExpiry) return
    let min = Number.POSITIVE_INFINITY
    for (const [id, lease] of s.leases) {
      if (lease.expiresAt <= now) s.leases.delete(id)
      else min = Math.min(min, lease.expiresAt)
    }
    s.minExpiry = min
  }
}
