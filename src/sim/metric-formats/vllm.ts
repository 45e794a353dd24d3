import type { MetricFormat, MetricsView } from '../metric-format.js'
import { labelPairs, PromWriter } from './prom-text.js'
import { vllmBuckets } from './vllm-buckets.js'
import { writeCacheConfigInfo, writeVllmCounters } from './vllm-counters.js'

/**
 * vLLM V1 (the default engine since 0.8): names and labels of vllm/v1/metrics/loggers.py.
 * Every series carries `model_name` and `engine` (the engine core index, "0" here).
 */
export const vllmFormat: MetricFormat = {
  name: 'vllm',
  buckets: (p) => vllmBuckets(p.engine.maxModelLen),
  render(v: MetricsView): string {
    const e = v.engine
    const st = e.stats
    const pe = e.profile.engine
    const l = labelPairs([
      ['model_name', v.modelName],
      ['engine', '0'],
    ])
    const w = new PromWriter('python')
    w.gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', l, e.numRunning)
    w.gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', l, e.numWaiting)
    w.gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', l, e.kv.usage)
    w.counter(
      'vllm:prefix_cache_queries_total',
      'Prefix cache queries, in terms of number of queried tokens.',
      l,
      st.prefixQueries,
    )
    w.counter(
      'vllm:prefix_cache_hits_total',
      'Prefix cache hits, in terms of number of cached tokens.',
      l,
      st.prefixHits,
    )
    writeVllmCounters(w, l, st)
    const h = st.hist
    w.histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', l, h.promptTokens)
    w.histogram(
      'vllm:request_generation_tokens',
      'Number of generation tokens processed.',
      l,
      h.generationTokens,
    )
    w.histogram(
      'vllm:iteration_tokens_total',
      'Histogram of number of tokens per engine_step.',
      l,
      h.iterationTokens,
    )
    w.histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', l, h.ttft)
    w.histogram('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', l, h.itl)
    w.histogram(
      'vllm:request_time_per_output_token_seconds',
      'Histogram of time_per_output_token_seconds per request.',
      l,
      h.tpotRequest,
    )
    w.histogram('vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', l, h.e2e)
    w.histogram(
      'vllm:request_queue_time_seconds',
      'Histogram of time spent in WAITING phase for request.',
      l,
      h.queue,
    )
    w.histogram(
      'vllm:request_inference_time_seconds',
      'Histogram of time spent in RUNNING phase for request.',
      l,
      h.inference,
    )
    w.histogram(
      'vllm:request_prefill_time_seconds',
      'Histogram of time spent in PREFILL phase for request.',
      l,
      h.prefill,
    )
    w.histogram(
      'vllm:request_decode_time_seconds',
      'Histogram of time spent in DECODE phase for request.',
      l,
      h.decode,
    )
    writeCacheConfigInfo(w, pe, [['engine', '0']])
    return w.text()
  },
}
