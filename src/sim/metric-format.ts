import type { SimEngine } from './engine.js'
import type { BucketSpec } from './engine-stats.js'
import type { SimProfile } from './profile-schema.js'

export const METRIC_FORMAT_NAMES = ['vllm', 'vllm-v0', 'sglang', 'tgi', 'llamacpp', 'trtllm'] as const
export type MetricFormatName = (typeof METRIC_FORMAT_NAMES)[number]

/** What a metric format reads: the engine's live state and counters, at one instant. */
export interface MetricsView {
  readonly modelName: string
  readonly engine: SimEngine
  /** Engine clock time of the scrape (ms), for rate gauges. */
  readonly nowMs: number
}

/**
 * One model server's /metrics dialect (a plugin, registered by name in metric-format-registry).
 *
 * Contract: `render` returns valid Prometheus text exposition 0.0.4 (every family with HELP and
 * TYPE, histograms cumulative with +Inf, `_count` and `_sum`), using the engine's metric names and
 * labels; it reads the view and never mutates it. `buckets` names the histogram bounds the format
 * exposes, and the engine records exactly those.
 */
export interface MetricFormat {
  readonly name: MetricFormatName
  buckets(profile: SimProfile): BucketSpec
  render(view: MetricsView): string
}
