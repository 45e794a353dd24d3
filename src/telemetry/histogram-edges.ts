/**
 * Histogram bucket edges (seconds unless noted).
 *
 * Each latency histogram's edges always include every configured class threshold of its
 * kind (TTFT edges hold every `slo.ttft_ms`, TPOT and ITL every `slo.tpot_ms`, E2E every
 * `slo.e2e_ms`, queue wait every `max_queue_wait_ms`), written as `ms / 1000` exactly as
 * the verdict compares, so "fraction within the SLO" read from a histogram's `le` bucket is
 * exact rather than interpolated. (vLLM's own TTFT buckets lack 2.0 s: not repeated here.)
 */
import type { GatewayConfig } from '../config/schema.js'

export const DEFAULT_TTFT_EDGES_S: readonly number[] = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 15,
  20, 30, 60, 120, 300, 600,
]

export const DEFAULT_TPOT_EDGES_S: readonly number[] = [
  0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5,
]

export const DEFAULT_E2E_EDGES_S: readonly number[] = [
  0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600, 7200,
]

export const DEFAULT_QUEUE_WAIT_EDGES_S: readonly number[] = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800,
]

/** |predicted - actual| / actual. */
export const PREDICTION_ERROR_EDGES: readonly number[] = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10]

export const HTTP_DURATION_EDGES_S: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
]

/** Requests in an endpoint's running batch (a count, not seconds). */
export const BATCH_SIZE_EDGES: readonly number[] = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]

/** Sorted, de-duplicated, finite and positive. */
export function mergeEdges(...lists: readonly (readonly number[])[]): number[] {
  const all = new Set<number>()
  for (const list of lists) for (const v of list) if (Number.isFinite(v) && v > 0) all.add(v)
  return [...all].sort((a, b) => a - b)
}

function thresholds(
  config: GatewayConfig,
  pick: (slo: GatewayConfig['classes'][string]) => number | undefined,
) {
  const out: number[] = []
  for (const cls of Object.values(config.classes)) {
    const thresholdMs = pick(cls)
    if (thresholdMs !== undefined) out.push(thresholdMs / 1000)
  }
  return out
}

export interface LatencyEdges {
  readonly ttft: number[]
  readonly tpot: number[]
  readonly itl: number[]
  readonly e2e: number[]
  readonly queueWait: number[]
}

export function latencyEdges(config: GatewayConfig): LatencyEdges {
  const ttftSlo = thresholds(config, (c) => c.slo.ttft_ms)
  const tpotSlo = thresholds(config, (c) => c.slo.tpot_ms)
  const e2eSlo = thresholds(config, (c) => c.slo.e2e_ms)
  const queue = thresholds(config, (c) => c.max_queue_wait_ms)
  return {
    ttft: mergeEdges(DEFAULT_TTFT_EDGES_S, config.telemetry.ttft_buckets_s ?? [], ttftSlo),
    tpot: mergeEdges(DEFAULT_TPOT_EDGES_S, tpotSlo),
    itl: mergeEdges(DEFAULT_TPOT_EDGES_S, tpotSlo),
    e2e: mergeEdges(DEFAULT_E2E_EDGES_S, e2eSlo),
    queueWait: mergeEdges(DEFAULT_QUEUE_WAIT_EDGES_S, queue),
  }
}
