/**
 * How a pool picks an endpoint for each request (the config's `backends.pools[].routing`):
 * the scorer, its weights, the saturation override and session affinity, and the prefix
 * index's geometry overrides. The scorers are in src/backends (scorer.ts, prefix-affinity.ts).
 */
import { z } from 'zod'

/** The routing's defaults (docs/config.md lists them). */
export const ROUTING_DEFAULTS = {
  scorer: 'prefix-affinity',
  /** A full prefix match weighs as much as this many requests queued at the server. */
  prefixWeight: 2,
  loadWeight: 1,
  /** KV usage after the request, or batch slots taken, at which an endpoint loses its affinity. */
  saturation: 0.8,
  /** More than this times an endpoint's share of the requests in flight, and it loses its affinity. */
  maxLoadRatio: 2,
  maxSessions: 100_000,
} as const

export const SCORERS = ['least-wait', 'prefix-affinity'] as const
export type ScorerName = (typeof SCORERS)[number]

const positiveInt = z.int().positive()

export const routingSchema = z.strictObject({
  /**
   * `least-wait`: the endpoint with the least predicted wait. `prefix-affinity`: the same
   * load score plus, per endpoint, the share of the prompt it is expected to hold in its
   * prefix cache (the gateway's memory of what it sent there), weighted.
   */
  scorer: z.enum(SCORERS).default(ROUTING_DEFAULTS.scorer),
  /** prefix-affinity: weight of a full prefix match (in queued requests of the load score). */
  prefix_weight: z.number().nonnegative().default(ROUTING_DEFAULTS.prefixWeight),
  /** prefix-affinity: weight of the least-wait load score. */
  load_weight: z.number().nonnegative().default(ROUTING_DEFAULTS.loadWeight),
  /**
   * prefix-affinity: an endpoint whose KV usage after the request, or share of batch slots
   * taken, reaches this loses its affinity (one hot prefix must not melt one replica).
   */
  saturation: z.number().gt(0).max(1).default(ROUTING_DEFAULTS.saturation),
  /**
   * prefix-affinity: bounded load. An endpoint with more requests in flight than this times
   * its share of the candidates' (ceil(ratio × (in flight + 1) / endpoints)) loses its affinity.
   */
  max_load_ratio: z.number().min(1).default(ROUTING_DEFAULTS.maxLoadRatio),
  /** prefix-affinity: requests with the same `x-session-id` go where that session went last, while it has headroom. */
  session_affinity: z.boolean().default(true),
  /** prefix-affinity: sessions remembered per pool (least recently used forgotten first). */
  max_sessions: positiveInt.default(ROUTING_DEFAULTS.maxSessions),
  /** The engine's KV block size in tokens for the prefix index; default: its cache_config_info, else 16. */
  block_size: positiveInt.max(4096).optional(),
  /** Blocks the prefix index remembers per endpoint; default: the endpoint's KV capacity in blocks. */
  index_blocks: positiveInt.max(16_777_216).optional(),
})

export type RoutingConfig = z.output<typeof routingSchema>
