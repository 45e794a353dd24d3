import type { MetricFormat, MetricsView } from '../metric-format.js'
import { labelPairs, PromWriter } from './prom-text.js'
import { VLLM_ITL_BUCKETS, VLLM_REQUEST_LATENCY_BUCKETS, VLLM_TTFT_BUCKETS } from './vllm-buckets.js'

/**
 * trtllm-serve (tensorrt_llm/metrics/collector.py): `trtllm_` names, labels `model_name` and
 * `engine_type`. The real server exposes them at /prometheus/metrics; the simulator serves them at
 * both /metrics and /prometheus/metrics.
 */
export const trtllmFormat: MetricFormat = {
  name: 'trtllm',
  buckets: () => ({
    ttft: VLLM_TTFT_BUCKETS,
    tpotRequest: VLLM_ITL_BUCKETS,
    e2e: VLLM_REQUEST_LATENCY_BUCKETS,
    queue: VLLM_REQUEST_LATENCY_BUCKETS,
  }),
  render(v: MetricsView): string {
    const e = v.engine
    const st = e.stats
    const kv = e.kv
    const l = labelPairs([
      ['model_name', v.modelName],
      ['engine_type', 'trtllm'],
    ])
    const w = new PromWriter('python')
    w.header('trtllm_request_success_total', 'Count of successfully processed requests.', 'counter')
    for (const reason of ['stop', 'length', 'abort'] as const) {
      w.sample('trtllm_request_success_total', `${l},finished_reason="${reason}"`, st.finished[reason])
    }
    const h = st.hist
    w.histogram(
      'trtllm_e2e_request_latency_seconds',
      'Histogram of end to end request latency in seconds.',
      l,
      h.e2e,
    )
    w.histogram(
      'trtllm_time_to_first_token_seconds',
      'Histogram of time to first token in seconds.',
      l,
      h.ttft,
    )
    w.histogram(
      'trtllm_time_per_output_token_seconds',
      'Histogram of time per output token in seconds.',
      l,
      h.tpotRequest,
    )
    w.histogram(
      'trtllm_request_queue_time_seconds',
      'Histogram of time spent in WAITING phase for request.',
      l,
      h.queue,
    )
    w.counter(
      'trtllm_prompt_tokens_total',
      'Cumulative number of prompt (input) tokens processed.',
      l,
      st.promptTokens,
    )
    w.counter(
      'trtllm_generation_tokens_total',
      'Cumulative number of generation (output) tokens produced.',
      l,
      st.generationTokens,
    )
    w.gauge('trtllm_num_requests_running', 'Number of active requests', l, e.numRunning)
    w.gauge('trtllm_num_requests_waiting', 'Number of queued requests', l, e.numWaiting)
    w.gauge('trtllm_kv_cache_utilization', 'KV cache utilization', l, kv.usage)
    const hitRate = st.prefixQueries > 0 ? st.prefixHits / st.prefixQueries : 0
    w.gauge('trtllm_kv_cache_hit_rate', 'KV cache hit rate', l, hitRate)
    w.gauge('trtllm_kv_cache_max_blocks', 'Maximum number of KV cache blocks', l, kv.totalBlocks)
    w.gauge('trtllm_kv_cache_used_blocks', 'Number of used KV cache blocks', l, kv.usedBlocks)
    w.gauge('trtllm_kv_cache_free_blocks', 'Number of free KV cache blocks', l, kv.freeBlocks)
    w.gauge('trtllm_kv_cache_tokens_per_block', 'Tokens per KV cache block', l, kv.blockSize)
    return w.text()
  },
}
