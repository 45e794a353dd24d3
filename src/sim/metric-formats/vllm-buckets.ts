import type { BucketSpec } from '../engine-stats.js'
import { buckets125 } from '../histogram.js'

/**
 * Histogram bounds of vLLM's PrometheusStatLogger (vllm/v1/metrics/loggers.py), transcribed.
 * TensorRT-LLM's MetricsCollector adapted the same lists.
 */
export const VLLM_TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
  80.0, 160.0, 640.0, 2560.0,
]
/** vllm:inter_token_latency_seconds (and the deprecated vllm:time_per_output_token_seconds). */
export const VLLM_ITL_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
]
/** request_latency_buckets: e2e, queue, inference, prefill and decode time. */
export const VLLM_REQUEST_LATENCY_BUCKETS = [
  0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
  960.0, 1920.0, 7680.0,
]
export const VLLM_ITERATION_TOKENS_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]

export function vllmBuckets(maxModelLen: number): BucketSpec {
  return {
    ttft: VLLM_TTFT_BUCKETS,
    itl: VLLM_ITL_BUCKETS,
    tpotRequest: VLLM_ITL_BUCKETS,
    e2e: VLLM_REQUEST_LATENCY_BUCKETS,
    queue: VLLM_REQUEST_LATENCY_BUCKETS,
    inference: VLLM_REQUEST_LATENCY_BUCKETS,
    prefill: VLLM_REQUEST_LATENCY_BUCKETS,
    decode: VLLM_REQUEST_LATENCY_BUCKETS,
    promptTokens: buckets125(maxModelLen),
    generationTokens: buckets125(maxModelLen),
    iterationTokens: VLLM_ITERATION_TOKENS_BUCKETS,
  }
}
