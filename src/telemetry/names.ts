/**
 * Every metric name the telemetry module exports, once. docs/metrics.md documents each;
 * the dashboard test checks expressions against these, the backends' names and the
 * recording rules.
 */

export const METRICS = {
  requests: 'slo_gateway_requests_total',
  goodRequests: 'slo_gateway_good_requests_total',
  goodTokens: 'slo_gateway_good_tokens_total',
  sloMissed: 'slo_gateway_slo_missed_total',
  missedRequests: 'slo_gateway_missed_requests_total',
  rejected: 'slo_gateway_rejected_total',
  requestsByPromptLen: 'slo_gateway_requests_by_prompt_len_total',
  goodTokensByPromptLen: 'slo_gateway_good_tokens_by_prompt_len_total',
  degraded: 'slo_gateway_degraded_total',
  degradedRequests: 'slo_gateway_degraded_requests_total',
  errors: 'slo_gateway_errors_total',
  tokens: 'slo_gateway_tokens_total',
  cost: 'slo_gateway_cost_total',
  ttft: 'slo_gateway_ttft_seconds',
  tpot: 'slo_gateway_tpot_seconds',
  itl: 'slo_gateway_itl_seconds',
  e2e: 'slo_gateway_e2e_seconds',
  queueWait: 'slo_gateway_queue_wait_seconds',
  predictionError: 'slo_gateway_ttft_prediction_error_ratio',
  queueDepth: 'slo_gateway_queue_depth',
  inflight: 'slo_gateway_inflight',
  ttftMargin: 'slo_gateway_ttft_margin_ratio',
  tpotMargin: 'slo_gateway_tpot_margin_ratio',
  sloThreshold: 'slo_gateway_slo_threshold_seconds',
  httpRequests: 'slo_gateway_http_requests_total',
  httpDuration: 'slo_gateway_http_request_duration_seconds',
  backendPreemptions: 'slo_gateway_backend_preemptions_total',
  backendPrefixQueries: 'slo_gateway_backend_prefix_cache_queries_total',
  backendPrefixHits: 'slo_gateway_backend_prefix_cache_hits_total',
  backendBusy: 'slo_gateway_backend_busy_seconds_total',
  backendBatchSize: 'slo_gateway_backend_running_batch_size',
} as const

export type MetricKey = keyof typeof METRICS

/** Histograms (exported with `_bucket`, `_sum`, `_count` series). */
export const HISTOGRAMS: readonly string[] = [
  METRICS.ttft,
  METRICS.tpot,
  METRICS.itl,
  METRICS.e2e,
  METRICS.queueWait,
  METRICS.predictionError,
  METRICS.httpDuration,
  METRICS.backendBatchSize,
]

/** Defined by the backends module (src/backends), not here; rules and dashboard use them. */
export const BACKEND_MODULE_METRICS: readonly string[] = [
  'slo_gateway_backend_up',
  'slo_gateway_backend_kv_usage_ratio',
  'slo_gateway_backend_waiting',
  'slo_gateway_backend_running',
  'slo_gateway_backend_scrape_age_seconds',
  'slo_gateway_backend_ejected',
  // prefix routing (src/backends/routing-metrics.ts)
  'slo_gateway_prefix_predicted_hit_ratio',
  'slo_gateway_prefix_predicted_hit_tokens_total',
  'slo_gateway_prefix_prompt_tokens_total',
  'slo_gateway_prefix_routing_total',
]

/** Defined by the tenants module (src/tenants/limiter-metrics.ts): the limiter store's health. */
export const TENANT_MODULE_METRICS: readonly string[] = [
  'slo_gateway_ratelimit_store_errors_total',
  'slo_gateway_ratelimit_degraded_mode',
]

/** Defined by config reload (src/reload.ts): reloads applied and refused. */
export const RELOAD_MODULE_METRICS: readonly string[] = ['slo_gateway_config_reloads_total']

/** Every series name the project exports (histograms expanded). */
export function exportedSeriesNames(): Set<string> {
  const out = new Set<string>(Object.values(METRICS))
  for (const h of HISTOGRAMS) for (const s of ['_bucket', '_sum', '_count']) out.add(h + s)
  for (const b of BACKEND_MODULE_METRICS) out.add(b)
  for (const t of TENANT_MODULE_METRICS) out.add(t)
  for (const r of RELOAD_MODULE_METRICS) out.add(r)
  return out
}
