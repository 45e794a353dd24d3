import type { MetricFormat, MetricsView } from '../metric-format.js'
import { labelPairs, PromWriter } from './prom-text.js'
import { vllmBuckets } from './vllm-buckets.js'
import { writeCacheConfigInfo, writeVllmCounters } from './vllm-counters.js'

/**
 * vLLM V0 engine (before 0.8 / VLLM_USE_V1=0): vllm/engine/metrics.py. Only `model_name` as a label,
 * KV usage as `vllm:gpu_cache_usage_perc`, the swapped queue, and TPOT as
 * `vllm:time_per_output_token_seconds`.
 */
export const vllmV0Format: MetricFormat = {
  name: 'vllm-v0',
  buckets: (p) => vllmBuckets(p.engine.maxModelLen),
  render(v: MetricsView): string {
    const e = v.engine
    const st = e.stats
    const pe = e.profile.engine
    const l = labelPairs([['model_name', v.modelName]])
    const w = new PromWriter('python')
    w.gauge('vllm:num_requests_running', 'Number of requests currently running on GPU.', l, e.numRunning)
    w.gauge('vllm:num_requests_swapped', 'Number of requests swapped to CPU.', l, 0)
    w.gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', l, e.numWaiting)
    w.gauge('vllm:gpu_cache_usage_perc', 'GPU KV-cache usage. 1 means 100 percent usage.', l, e.kv.usage)
    w.gauge('vllm:cpu_cache_usage_perc', 'CPU KV-cache usage. 1 means 100 percent usage.', l, 0)
    const hitRate = st.prefixQueries > 0 ? st.prefixHits / st.prefixQueries : 0
    w.gauge('vllm:gpu_prefix_cache_hit_rate', 'GPU prefix cache block hit rate.', l, hitRate)
    writeVllmCounters(w, l, st)
    const h = st.hist
    w.histogram(
      'vllm:iteration_tokens_total',
      'Histogram of number of tokens per engine_step.',
      l,
      h.iterationTokens,
    )
    w.histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', l, h.ttft)
    w.histogram(
      'vllm:time_per_output_token_seconds',
      'Histogram of time per output token in seconds.',
      l,
      h.itl,
    )
    w.histogram(
      'vllm:e2e_request_latency_seconds',
      'Histogram of end to end request latency in seconds.',
      l,
      h.e2e,
    )
    w.histogram(
      'vllm:request_queue_time_seconds',
      'Histogram of time spent in WAITING phase for request.',
      l,
      h.queue,
    )
    w.histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', l, h.promptTokens)
    w.histogram(
      'vllm:request_generation_tokens',
      'Number of generation tokens processed.',
      l,
      h.generationTokens,
    )
    writeCacheConfigInfo(w, pe)
    return w.text()
  },
}
