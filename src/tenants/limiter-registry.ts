/**
 * Limiter stores by name, and the tenants' limiter as the config's `limits` asks for it.
 * Adding a store: a file beside this one implementing Limiter (limiter.ts), and a line
 * here with its options type.
 */
import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger as Logger } from 'fastify'
import type { Registry } from 'prom-client'
import type { Clock } from '../clock.js'
import type { LimitsConfig } from '../config/schema.js'
import { FailoverLimiter } from './failover.js'
import type { Limiter } from './limiter.js'
import { limiterMetrics } from './limiter-metrics.js'
import { MemoryStore, type MemoryStoreOptions } from './memory-store.js'
import { RedisStore, type RedisStoreOptions } from './redis-store.js'

/** Each store's name and the options it is built from. */
export interface LimiterStoreOptions {
  memory: MemoryStoreOptions
  redis: RedisStoreOptions
}

export type LimiterStoreName = keyof LimiterStoreOptions

const STORES: { [K in LimiterStoreName]: (opts: LimiterStoreOptions[K]) => Limiter } = {
  memory: (opts) => new MemoryStore(opts),
  redis: (opts) => new RedisStore(opts),
}

export function createLimiter<K extends LimiterStoreName>(name: K, opts: LimiterStoreOptions[K]): Limiter {
  const make = STORES[name] as (o: LimiterStoreOptions[K]) => Limiter
  return make(opts)
}

export const limiterStoreNames = Object.keys(STORES) as LimiterStoreName[]

export interface TenantLimiterDeps {
  readonly clock?: Clock | undefined
  readonly logger?: Logger | undefined
  /** Where the store's health metrics go; none: not exported. */
  readonly registry?: Registry | undefined
}

/**
 * The limiter the config's `limits` names: the memory store, or the Redis store behind the
 * `on_store_error` policy (failover.ts), this replica beating on Redis so the others know
 * how many share each limit.
 */
export function tenantLimiter(limits: LimitsConfig, deps: TenantLimiterDeps = {}): Limiter {
  const signals = deps.registry === undefined ? undefined : limiterMetrics(deps.registry, limits.store)
  if (limits.store === 'memory') return new MemoryStore({ clock: deps.clock })
  const r = limits.redis
  let failover: FailoverLimiter | undefined
  const primary = new RedisStore({
    url: r.url,
    timeoutMs: r.timeout_ms,
    connectTimeoutMs: r.connect_timeout_ms,
    keyPrefix: r.key_prefix,
    onError: (err) => deps.logger?.debug({ err }, 'redis limiter store connection error'),
    onConnectionChange: (up) => failover?.connectionChanged(up),
  })
  failover = new FailoverLimiter({
    primary,
    policy: limits.on_store_error,
    replicaId: randomUUID(),
    replicas: limits.replicas,
    clock: deps.clock,
    logger: deps.logger,
    signals,
  })
  return failover
}
