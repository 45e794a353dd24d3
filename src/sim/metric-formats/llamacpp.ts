import type { MetricFormat, MetricsView } from '../metric-format.js'
import { PromWriter } from './prom-text.js'

/**
 * llama.cpp `llama-server --metrics` (tools/server/server.cpp): unlabelled `llamacpp:` counters and
 * gauges, no histograms. Slots processing = running, deferred tasks = waiting. (Builds before
 * mid-2025 also exported `llamacpp:kv_cache_usage_ratio`; current ones do not.)
 */
export const llamacppFormat: MetricFormat = {
  name: 'llamacpp',
  buckets: () => ({}),
  render(v: MetricsView): string {
    const e = v.engine
    const st = e.stats
    const w = new PromWriter('plain')
    w.counter('llamacpp:prompt_tokens_total', 'Number of prompt tokens processed.', '', st.promptTokens)
    w.counter('llamacpp:prompt_seconds_total', 'Prompt process time', '', st.prefillSeconds)
    w.counter(
      'llamacpp:tokens_predicted_total',
      'Number of generation tokens processed.',
      '',
      st.generationTokens,
    )
    w.counter('llamacpp:tokens_predicted_seconds_total', 'Predict process time', '', st.decodeSeconds)
    w.counter('llamacpp:n_decode_total', 'Total number of llama_decode() calls', '', st.steps)
    w.gauge(
      'llamacpp:prompt_tokens_seconds',
      'Average prompt throughput in tokens/s.',
      '',
      st.promptRate.perSecond(v.nowMs),
    )
    w.gauge(
      'llamacpp:predicted_tokens_seconds',
      'Average generation throughput in tokens/s.',
      '',
      st.generationRate.perSecond(v.nowMs),
    )
    w.gauge('llamacpp:requests_processing', 'Number of requests processing.', '', e.numRunning)
    w.gauge('llamacpp:requests_deferred', 'Number of requests deferred.', '', e.numWaiting)
    w.gauge(
      'llamacpp:n_busy_slots_per_decode',
      'Average number of busy slots per llama_decode() call',
      '',
      st.busySlots / Math.max(1, st.steps),
    )
    return w.text()
  },
}
