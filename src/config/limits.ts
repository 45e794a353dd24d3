/**
 * How the tenants' limits are enforced (the config's `limits`): the store, the Redis
 * connection, what happens when Redis cannot answer, and how much a request reserves.
 */
import { z } from 'zod'

const positiveInt = z.int().positive()

/** The limits' defaults (also in schema.ts's DEFAULTS). */
export const LIMITS_DEFAULTS = {
  /** Output tokens reserved at most per request by the tenant limits (limits.reserve_output_cap). */
  reserveOutputCap: 4096,
  /**
   * A tenant concurrency lease's life (limits.lease_ms). The gateway renews its in-flight
   * requests' leases every third of it, so a stream may last longer; a replica that dies
   * frees its slots within this long.
   */
  limitLeaseMs: 30_000,
  /** The Redis limiter store's per-call timeout (limits.redis.timeout_ms). */
  redisTimeoutMs: 50,
} as const

const DEFAULTS = LIMITS_DEFAULTS

/** The shared limiter store (limits.store: redis). */
const redisLimitsSchema = z.strictObject({
  /** `redis://[user:pass@]host:port[/db]` (or `rediss://`); SLO_GATEWAY_REDIS_URL overrides it. */
  url: z.url({ protocol: /^rediss?$/ }).default('redis://127.0.0.1:6379'),
  /** Every limiter call's timeout: a slower Redis is a store error, never a slow request. */
  timeout_ms: positiveInt.default(DEFAULTS.redisTimeoutMs),
  connect_timeout_ms: positiveInt.default(1_000),
  /** Prefix of every key the limiter writes. */
  key_prefix: z.string().min(1).default('slo-gw:rl:'),
})

/**
 * How the tenants' limits (tenants[].limits) are enforced: in this process (`memory`, one
 * replica) or shared by every replica through Redis (`redis`).
 */
export const limitsSchema = z.strictObject({
  /** Where the limits' state lives. */
  store: z.enum(['memory', 'redis']).default('memory'),
  redis: redisLimitsSchema.prefault({}),
  /**
   * When the Redis store cannot answer: `fail_open` checks against a local limiter holding
   * this replica's share of each limit (1 / replicas); `fail_closed` refuses with 503.
   */
  on_store_error: z.enum(['fail_open', 'fail_closed']).default('fail_open'),
  /** The replica count a fail-open share divides by; default: the replicas seen live on Redis. */
  replicas: positiveInt.optional(),
  /** A request reserves its prompt tokens plus min(max_tokens, this) of tpm and daily_tokens at admission. */
  reserve_output_cap: positiveInt.default(DEFAULTS.reserveOutputCap),
  /**
   * A concurrency lease (and its reservation) ends after this long unless renewed: the
   * gateway renews its in-flight requests' every lease_ms / 3, so only a dead replica's expire.
   */
  lease_ms: positiveInt.min(3_000).default(DEFAULTS.limitLeaseMs),
})

export type LimitsConfig = z.output<typeof limitsSchema>
