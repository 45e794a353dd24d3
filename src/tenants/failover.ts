/**
 * A shared limiter store (Redis) with a policy for when it cannot answer, so a Redis outage
 * never takes the gateway down and never makes a request wait past the store's timeout:
 *
 * - `fail_open`: the request is checked against a local memory limiter holding this
 *   replica's share of each limit (the limit / replicas, at least 1), so N replicas together
 *   stay near the limit. `replicas` is the config's, or the count of replicas that beat on
 *   Redis (each beats every `heartbeatMs`), as last seen before the outage.
 * - `fail_closed`: the store's error goes on to the limits stage, which refuses with 503.
 *
 * A request is settled and renewed where it was admitted: the local ids are remembered
 * until they settle. A store error on settle is counted and thrown (the limits stage logs
 * it), and the settle is sent again once the store answers (settle is idempotent), so the
 * shared lease and its token reservation are released then, not only at the lease's expiry.
 * A check that timed out may still be applied by the store (Redis runs what it was sent,
 * late): its request is released there at once (a settle of no tokens, which the store runs
 * after the check, in order on the connection; a no-op if the check never landed), again
 * once the store answers if that fails too. Settles still owed are `pendingSettles` in
 * /admin/state.
 *
 * Degraded mode (the `slo_gateway_ratelimit_degraded_mode` gauge, and one log line on each
 * change) begins with a lost connection or DEGRADE_AFTER store errors in a row (before that,
 * each failed check alone takes the policy). While it lasts, checks go
 * straight to the policy (a wedged Redis costs one timeout, not one per request), and the
 * heartbeat probes the store (every `heartbeatMs`, and at once on reconnect): its first
 * answer, or any other call's, ends it. Healing needs nothing but Redis back.
 */
import type { FastifyBaseLogger as Logger } from 'fastify'
import type { Clock } from '../clock.js'
import type {
  CheckRequest,
  LimitDecision,
  Limiter,
  RenewRequest,
  SettleRequest,
  SettleResult,
  TenantLimits,
  TenantUsage,
} from './limiter.js'
import { LimiterStoreError } from './limiter-errors.js'
import { MemoryStore } from './memory-store.js'

export type StoreErrorPolicy = 'fail_open' | 'fail_closed'

/** Store errors in a row that make an outage (a lost connection makes one at once). */
export const DEGRADE_AFTER = 3

/** Settles owed to the store at most (the oldest dropped past it: their leases expire by themselves). */
export const MAX_PENDING_SETTLES = 10_000

/** A store shared by replicas: it can say how many are alive. */
export interface SharedStore extends Limiter {
  /** True while connected: a beat is not sent before (it would only fail). */
  readonly connected: boolean
  /** Resolves once connected, or rejects after `timeoutMs`. */
  ready(timeoutMs: number): Promise<void>
  heartbeat(replicaId: string, ttlMs: number): Promise<number>
}

/** What the failover reports to telemetry. */
export interface FailoverSignals {
  storeError(store: string, code: string): void
  degraded(store: string, on: boolean): void
}

export interface FailoverOptions {
  readonly primary: SharedStore
  readonly policy: StoreErrorPolicy
  readonly replicaId: string
  /** Fixed replica count for the fail-open share; undefined: learned from heartbeats. */
  readonly replicas?: number | undefined
  /** How often this replica beats (and re-learns the count); default 1 000 ms. */
  readonly heartbeatMs?: number | undefined
  readonly clock?: Clock | undefined
  readonly logger?: Logger | undefined
  readonly signals?: FailoverSignals | undefined
}

/** One replica's share of each limit: the limit / replicas, rounded down, at least 1. */
export function shareOf(limits: TenantLimits, replicas: number): TenantLimits {
  if (replicas <= 1) return limits
  const part = (n: number | undefined) =>
    n === undefined ? undefined : Math.max(1, Math.floor(n / replicas))
  return {
    rpm: part(limits.rpm),
    tpm: part(limits.tpm),
    max_concurrent: part(limits.max_concurrent),
    daily_tokens: part(limits.daily_tokens),
  }
}

export class FailoverLimiter implements Limiter {
  readonly name: string
  private readonly primary: SharedStore
  private readonly local: MemoryStore
  private readonly policy: StoreErrorPolicy
  private readonly fixedReplicas: number | undefined
  private readonly logger: Logger | undefined
  private readonly signals: FailoverSignals | undefined
  /** Requests admitted by the local share, until they settle. */
  private readonly localIds = new Set<string>()
  /** Settles the store has not taken yet, by request id; `sending` while one is on its way. */
  private readonly owed = new Map<string, { req: SettleRequest; sending: boolean }>()
  private learnedReplicas = 1
  /** Store errors in a row; DEGRADE_AFTER of them (or a lost connection) is degraded mode. */
  private failures = 0
  private lastError = new LimiterStoreError('LIMITER_ERR_UNAVAILABLE', 'redis', 'not connected')
  private isDegraded = false
  private readonly timer: NodeJS.Timeout
  private readonly beat: () => void

  constructor(opts: FailoverOptions) {
    this.primary = opts.primary
    this.name = opts.primary.name
    this.local = new MemoryStore({ clock: opts.clock })
    this.policy = opts.policy
    this.fixedReplicas = opts.replicas
    this.logger = opts.logger
    this.signals = opts.signals
    const every = opts.heartbeatMs ?? 1_000
    const beat = () => {
      if (!this.primary.connected) return
      this.primary.heartbeat(opts.replicaId, every * 3).then(
        (n) => {
          this.learnedReplicas = n
          this.healthy()
          this.resend()
        },
        (err: unknown) => this.failed(err),
      )
    }
    this.beat = beat
    this.timer = setInterval(beat, every)
    this.timer.unref()
  }

  /** Waits (at most `timeoutMs`) for the shared store's first connection, at startup. */
  ready(timeoutMs: number): Promise<void> {
    return this.primary.ready(timeoutMs)
  }

  /**
   * For /admin/state: the store, whether it is degraded, the replicas a share divides by, and
   * the requests admitted by the local share not yet settled (their leases and reservations
   * are in no shared store's usage), and the settles the store still owes an answer to.
   */
  describe(): object {
    return {
      store: this.name,
      policy: this.policy,
      degraded: this.isDegraded,
      replicas: this.replicas,
      localLeases: this.localIds.size,
      pendingSettles: this.owed.size,
    }
  }

  /** The divisor of the fail-open share now. */
  get replicas(): number {
    return this.fixedReplicas ?? this.learnedReplicas
  }

  get degraded(): boolean {
    return this.isDegraded
  }

  /** Told by the store when its connection drops or comes back (before any call fails). */
  connectionChanged(connected: boolean): void {
    if (connected) this.beat()
    else {
      this.lastError = new LimiterStoreError('LIMITER_ERR_UNAVAILABLE', this.name, 'connection lost')
      this.degrade('connection lost')
    }
  }

  async check(req: CheckRequest): Promise<LimitDecision> {
    // degraded: the heartbeat probes for the store's return; requests do not wait on it
    if (this.isDegraded) return this.fallback(req, this.lastError)
    try {
      const d = await this.primary.check(req)
      this.failures = 0
      return d
    } catch (err) {
      if (!(err instanceof LimiterStoreError)) throw err
      this.failed(err)
      // the store may yet run it: whatever it would hold is released (no tokens used there)
      if (err.code === 'LIMITER_ERR_TIMEOUT')
        this.owe({ tenant: req.tenant, requestId: req.requestId, limits: req.limits, usedTokens: 0 })
      return this.fallback(req, err)
    }
  }

  private async fallback(req: CheckRequest, err: LimiterStoreError): Promise<LimitDecision> {
    if (this.policy === 'fail_closed') throw err
    const d = await this.local.check({ ...req, limits: shareOf(req.limits, this.replicas) })
    if (d.allowed) this.localIds.add(req.requestId)
    return d
  }

  async settle(req: SettleRequest): Promise<SettleResult> {
    if (this.localIds.delete(req.requestId)) {
      return this.local.settle({ ...req, limits: shareOf(req.limits, this.replicas) })
    }
    try {
      const r = await this.primary.settle(req)
      this.owed.delete(req.requestId)
      this.healthy()
      return r
    } catch (err) {
      this.failed(err)
      if (err instanceof LimiterStoreError) this.remember(req)
      throw err
    }
  }

  /** Sends `req` to the store now, and again once it answers if this fails. */
  private owe(req: SettleRequest): void {
    this.remember(req)
    this.resend()
  }

  private remember(req: SettleRequest): void {
    const had = this.owed.get(req.requestId)
    this.owed.set(req.requestId, { req, sending: had?.sending ?? false })
    if (this.owed.size > MAX_PENDING_SETTLES) {
      const oldest = this.owed.keys().next()
      if (oldest.done !== true) this.owed.delete(oldest.value)
    }
  }

  /** The owed settles, each sent once (a failed one waits for the store's next answer). */
  private resend(): void {
    for (const [id, entry] of this.owed) {
      if (entry.sending) continue
      entry.sending = true
      this.primary.settle(entry.req).then(
        () => {
          if (this.owed.get(id) === entry) this.owed.delete(id)
        },
        (err: unknown) => {
          entry.sending = false
          this.failed(err)
        },
      )
    }
  }

  async renew(req: RenewRequest): Promise<boolean> {
    if (this.localIds.has(req.requestId)) return this.local.renew(req)
    try {
      const r = await this.primary.renew(req)
      this.healthy()
      return r
    } catch (err) {
      this.failed(err)
      throw err
    }
  }

  usage(tenant: string, limits: TenantLimits): Promise<TenantUsage> {
    return this.primary.usage(tenant, limits)
  }

  async close(): Promise<void> {
    clearInterval(this.timer)
    await Promise.all([this.primary.close(), this.local.close()])
  }

  private failed(err: unknown): void {
    if (err instanceof LimiterStoreError) {
      this.lastError = err
      this.signals?.storeError(err.store, err.code)
      // one slow answer is not an outage: that request alone takes the policy
      if (++this.failures >= DEGRADE_AFTER || !this.primary.connected) this.degrade(err.message)
    }
  }

  private degrade(why: string): void {
    if (this.isDegraded) return
    this.isDegraded = true
    this.signals?.degraded(this.name, true)
    const share = this.policy === 'fail_open' ? `each limit / ${this.replicas} locally` : 'refused with 503'
    this.logger?.warn(
      { store: this.name, policy: this.policy, replicas: this.replicas, reason: why },
      `tenant limiter store unavailable (${why}); requests are ${share} until it is back`,
    )
  }

  private healthy(): void {
    this.failures = 0
    if (!this.isDegraded) return
    this.isDegraded = false
    this.signals?.degraded(this.name, false)
    this.logger?.info({ store: this.name }, 'tenant limiter store is back; shared limits resume')
  }
}
