/**
 * The Redis limiter store: limits shared by every gateway replica on one Redis (the
 * contract is on the Limiter interface, limiter.ts; the Lua and the keys in
 * redis-scripts.ts). One EVALSHA per call; time from Redis's TIME.
 *
 * Never hangs: every call has a short timeout (`timeoutMs`, default 50 ms, ioredis
 * `commandTimeout`), commands are never queued while disconnected (`enableOfflineQueue:
 * false`) nor retried or resent after a reconnect (a call the caller saw fail must not be
 * charged later), so a down or slow Redis rejects at once, or within the timeout, with a
 * LimiterStoreError. ioredis reconnects in the background (backoff capped at
 * `reconnectMaxMs`), and calls work again as soon as it is back (scripts are reloaded:
 * EVALSHA falls back to EVAL on NOSCRIPT).
 *
 * A call that timed out may still run when a slow Redis gets to it: the charge then stands
 * until its lease expires (a check) or is lost (a settle). A retried check with the same
 * requestId is not charged twice.
 */
import { EventEmitter } from 'node:events'
import { Redis, type RedisOptions } from 'ioredis'
import {
  type CheckRequest,
  CONCURRENCY_RETRY_MS,
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
import { LimiterStoreError, redisStoreError } from './limiter-errors.js'
import { CHECK_LUA, HEARTBEAT_LUA, RENEW_LUA, SETTLE_LUA, USAGE_LUA } from './redis-scripts.js'

export interface RedisStoreOptions {
  /** `redis://[user:pass@]host:port[/db]`; default redis://127.0.0.1:6379. */
  readonly url?: string | undefined
  /** Per-call timeout, ms (default 50). */
  readonly timeoutMs?: number | undefined
  /** Connect timeout, ms (default 1000). */
  readonly connectTimeoutMs?: number | undefined
  /** The longest wait between reconnect attempts, ms (default 1000). */
  readonly reconnectMaxMs?: number | undefined
  /** Prefix of every key (default `slo-gw:rl:`). */
  readonly keyPrefix?: string | undefined
  /** Told of connection errors (ioredis emits them as events; logged and counted by the caller). */
  readonly onError?: ((err: Error) => void) | undefined
  /** Told when the store loses its connection (false) and when it is back (true): degraded mode and healing. */
  readonly onConnectionChange?: ((connected: boolean) => void) | undefined
}

export const REDIS_STORE_DEFAULTS = {
  url: 'redis://127.0.0.1:6379',
  timeoutMs: 50,
  connectTimeoutMs: 1_000,
  reconnectMaxMs: 1_000,
  keyPrefix: 'slo-gw:rl:',
} as const

/** The commands defineCommand adds (ioredis types them only at run time). */
interface LimiterCommands {
  sloLimiterCheck(...args: (string | number)[]): Promise<unknown>
  sloLimiterSettle(...args: (string | number)[]): Promise<unknown>
  sloLimiterRenew(...args: (string | number)[]): Promise<unknown>
  sloLimiterHeartbeat(...args: (string | number)[]): Promise<unknown>
  sloLimiterUsage(...args: (string | number)[]): Promise<unknown>
}

const REFUSED: readonly (LimitName | undefined)[] = [
  undefined,
  'daily_tokens',
  'max_concurrent',
  'rpm',
  'tpm',
]

const SCRIPTS = [CHECK_LUA, SETTLE_LUA, RENEW_LUA, HEARTBEAT_LUA, USAGE_LUA]

const isNumber = (v: unknown): v is number => typeof v === 'number'

function ints(reply: unknown, length: number): number[] {
  if (!Array.isArray(reply) || reply.length !== length || !reply.every(isNumber)) {
    throw new LimiterStoreError(
      'LIMITER_ERR_REPLY',
      'redis',
      `unexpected script reply ${JSON.stringify(reply)}`,
    )
  }
  return reply as number[]
}

function limitState(limit: number, remaining: number, resetMs: number): LimitState | undefined {
  return limit < 0 ? undefined : { limit, remaining, resetMs }
}

const rethrow = (err: unknown): never => {
  throw redisStoreError(err)
}

const arg = (n: number | undefined): number => (n !== undefined && n > 0 ? n : 0)

export class RedisStore implements Limiter {
  readonly name = 'redis'
  private readonly redis: Redis & LimiterCommands
  private readonly prefix: string

  constructor(opts: RedisStoreOptions = {}) {
    const d = REDIS_STORE_DEFAULTS
    const reconnectMaxMs = opts.reconnectMaxMs ?? d.reconnectMaxMs
    const options: RedisOptions = {
      commandTimeout: opts.timeoutMs ?? d.timeoutMs,
      connectTimeout: opts.connectTimeoutMs ?? d.connectTimeoutMs,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (times) => Math.min(times * 50, reconnectMaxMs),
    }
    const redis = new Redis(opts.url ?? d.url, options)
    redis.defineCommand('sloLimiterCheck', { numberOfKeys: 3, lua: CHECK_LUA })
    redis.defineCommand('sloLimiterSettle', { numberOfKeys: 3, lua: SETTLE_LUA })
    redis.defineCommand('sloLimiterRenew', { numberOfKeys: 3, lua: RENEW_LUA })
    redis.defineCommand('sloLimiterHeartbeat', { numberOfKeys: 1, lua: HEARTBEAT_LUA })
    redis.defineCommand('sloLimiterUsage', { numberOfKeys: 3, lua: USAGE_LUA })
    const onError = opts.onError
    // Without a listener ioredis prints every reconnect failure; the caller logs them.
    redis.on('error', (err: Error) => onError?.(err))
    const onChange = opts.onConnectionChange
    const tell = (connected: boolean) => {
      if (connected === this.up) return
      this.up = connected
      if (connected) this.events.emit('up')
      onChange?.(connected)
    }
    redis.on('ready', () => {
      // loaded before the first call needs them, so no call pays EVALSHA's NOSCRIPT round trip
      Promise.all(SCRIPTS.map((lua) => redis.script('LOAD', lua))).then(
        () => tell(true),
        (err: Error) => {
          onError?.(err)
          tell(true)
        },
      )
    })
    redis.on('close', () => tell(false))
    this.redis = redis as Redis & LimiterCommands
    this.prefix = opts.keyPrefix ?? d.keyPrefix
  }

  /** Connected, its scripts loaded: ready for calls. */
  private up = false
  private readonly events = new EventEmitter()

  /** True while connected and ready for calls. */
  get connected(): boolean {
    return this.up && this.redis.status === 'ready'
  }

  /** Resolves once connected (at once when already), or rejects after `timeoutMs`. */
  ready(timeoutMs = 5_000): Promise<void> {
    if (this.connected) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const onReady = () => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(() => {
        this.events.off('up', onReady)
        reject(
          new LimiterStoreError('LIMITER_ERR_UNAVAILABLE', 'redis', `not connected after ${timeoutMs} ms`),
        )
      }, timeoutMs)
      this.events.once('up', onReady)
    })
  }

  async check(req: CheckRequest): Promise<LimitDecision> {
    const L = req.limits
    const r = ints(
      await this.redis
        .sloLimiterCheck(
          ...this.keys(req.tenant, req.requestId),
          arg(L.rpm),
          arg(L.tpm),
          arg(L.max_concurrent),
          arg(L.daily_tokens),
          tokenCount(req.reserveTokens),
          leaseLife(req.leaseMs),
          req.requestId,
          CONCURRENCY_RETRY_MS,
        )
        .catch(rethrow),
      10,
    )
    const requests = limitState(r[4]!, r[5]!, r[6]!)
    const tokens = limitState(r[7]!, r[8]!, r[9]!)
    const states = { ...(requests ? { requests } : {}), ...(tokens ? { tokens } : {}) }
    if (r[0] === 1) return { allowed: true, ...states }
    const refusedBy = REFUSED[r[1]!]
    if (refusedBy === undefined) {
      throw new LimiterStoreError('LIMITER_ERR_REPLY', 'redis', `refused by unknown limit ${r[1]}`)
    }
    return { allowed: false, refusedBy, retryAfterMs: r[2]!, budgetSpent: r[3] === 1, ...states }
  }

  async settle(req: SettleRequest): Promise<SettleResult> {
    const r = ints(
      await this.redis
        .sloLimiterSettle(
          ...this.keys(req.tenant, req.requestId),
          arg(req.limits.tpm),
          tokenCount(req.usedTokens),
          req.requestId,
        )
        .catch(rethrow),
      4,
    )
    const tokens = limitState(r[1]!, r[2]!, r[3]!)
    return { settled: r[0] === 1, ...(tokens ? { tokens } : {}) }
  }

  async renew(req: RenewRequest): Promise<boolean> {
    const reply = await this.redis
      .sloLimiterRenew(...this.keys(req.tenant, req.requestId), leaseLife(req.leaseMs), req.requestId)
      .catch(rethrow)
    return reply === 1
  }

  async usage(tenant: string, limits: TenantLimits): Promise<TenantUsage> {
    const r = ints(
      await this.redis
        .sloLimiterUsage(...this.keys(tenant, ''), arg(limits.rpm), arg(limits.tpm))
        .catch(rethrow),
      8,
    )
    const requests = limitState(r[0]!, r[1]!, r[2]!)
    const tokens = limitState(r[3]!, r[4]!, r[5]!)
    return {
      ...(requests ? { requests } : {}),
      ...(tokens ? { tokens } : {}),
      concurrent: r[6]!,
      dailyTokens: r[7]!,
    }
  }

  /**
   * Says this replica is alive for `ttlMs`, and returns how many replicas are (this one
   * included): what a fail-open share divides each limit by.
   */
  async heartbeat(replicaId: string, ttlMs: number): Promise<number> {
    const reply = await this.redis
      .sloLimiterHeartbeat(`${this.prefix}replicas`, replicaId, Math.max(1, Math.ceil(ttlMs)))
      .catch(rethrow)
    if (typeof reply !== 'number' || reply < 1) {
      throw new LimiterStoreError(
        'LIMITER_ERR_REPLY',
        'redis',
        `unexpected heartbeat reply ${JSON.stringify(reply)}`,
      )
    }
    return reply
  }

  async close(): Promise<void> {
    this.redis.disconnect()
  }

  private keys(tenant: string, requestId: string): [string, string, string] {
    const base = `${this.prefix}{${tenant}}:`
    return [`${base}s`, `${base}l`, `${base}r:${requestId}`]
  }
}
