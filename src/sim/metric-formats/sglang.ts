import type { MetricFormat, MetricsView } from '../metric-format.js'
import { labelPairs, PromWriter } from './prom-text.js'

/** Bounds from SGLang's production-metrics documentation (python/sglang/srt/metrics/collector.py). */
const TTFT = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 15.0, 20.0,
  25.0, 30.0,
]
const E2E = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0]
const TPOT = [
  0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
]

/**
 * SGLang (`--enable-metrics`): `sglang:` names with a `model_name` label. Token usage is KV tokens
 * used / the pool size (`max_total_num_tokens`); preemption is called "retraction".
 */
export const sglangFormat: MetricFormat = {
  name: 'sglang',
  buckets: () => ({ ttft: TTFT, e2e: E2E, itl: TPOT, tpotRequest: TPOT }),
  render(v: MetricsView): string {
    const e = v.engine
    const st = e.stats
    const bs = e.kv.blockSize
    const l = labelPairs([['model_name', v.modelName]])
    const w = new PromWriter('python')
    w.counter('sglang:prompt_tokens_total', 'Number of prefill tokens processed.', l, st.promptTokens)
    w.counter(
      'sglang:generation_tokens_total',
      'Number of generation tokens processed.',
      l,
      st.generationTokens,
    )
    w.counter('sglang:num_requests_total', 'Number of requests processed.', l, st.requestsReceived)
    w.gauge('sglang:num_running_reqs', 'The number of running requests.', l, e.numRunning)
    w.gauge('sglang:num_queue_reqs', 'The number of requests in the waiting queue.', l, e.numWaiting)
    w.gauge('sglang:num_used_tokens', 'The number of used tokens.', l, e.kv.usedBlocks * bs)
    w.gauge(
      'sglang:max_total_num_tokens',
      'Maximum total number of tokens in the KV cache pool.',
      l,
      e.kv.totalBlocks * bs,
    )
    w.gauge('sglang:token_usage', 'The token usage.', l, e.kv.usage)
    w.gauge(
      'sglang:gen_throughput',
      'The generation throughput (token/s).',
      l,
      st.generationRate.perSecond(v.nowMs),
    )
    const hitRate = st.prefixQueries > 0 ? st.prefixHits / st.prefixQueries : 0
    w.gauge('sglang:cache_hit_rate', 'The prefix cache hit rate.', l, hitRate)
    w.gauge('sglang:num_retracted_reqs', 'The number of retracted requests.', l, 0)
    w.counter('sglang:num_retracted_requests_total', 'Total number of retracted requests.', l, st.preemptions)
    const h = st.hist
    w.histogram(
      'sglang:time_to_first_token_seconds',
      'Histogram of time to first token in seconds.',
      l,
      h.ttft,
    )
    w.histogram(
      'sglang:e2e_request_latency_seconds',
      'Histogram of End-to-end request latency in seconds',
      l,
      h.e2e,
    )
    w.histogram(
      'sglang:time_per_output_token_seconds',
      'Histogram of time per output token in seconds.',
      l,
      h.tpotRequest,
    )
    w.histogram(
      'sglang:inter_token_latency_seconds',
      'Histogram of inter-token latency in seconds.',
      l,
      h.itl,
    )
    return w.text()
  },
}
