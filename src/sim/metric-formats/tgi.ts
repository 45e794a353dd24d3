import { geometricBuckets } from '../histogram.js'
import type { MetricFormat, MetricsView } from '../metric-format.js'
import { PromWriter } from './prom-text.js'

/** TGI router/src/server.rs: every `*_duration` histogram gets 35 buckets, 0.0001·1.5^k. */
const DURATION = geometricBuckets(0.0001, 1.5, 35)

function tenths(max: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => (max / n) * (i + 1))
}

/**
 * Hugging Face TGI: unlabelled `tgi_` series from the Rust metrics exporter. Counters keep TGI's
 * names (`tgi_request_count`, no `_total`), which promtool's linter flags on the real server too.
 */
export const tgiFormat: MetricFormat = {
  name: 'tgi',
  buckets: (p) => ({
    e2e: DURATION,
    queue: DURATION,
    inference: DURATION,
    tpotRequest: DURATION,
    promptTokens: tenths(p.engine.maxModelLen, 100),
    generationTokens: tenths(p.engine.maxModelLen, 100),
  }),
  render(v: MetricsView): string {
    const e = v.engine
    const st = e.stats
    const h = st.hist
    const done = st.finished.stop + st.finished.length
    const w = new PromWriter('plain')
    w.gauge('tgi_queue_size', 'Current queue size', '', e.numWaiting)
    w.gauge('tgi_batch_current_size', 'Current batch size', '', e.numRunning)
    w.gauge(
      'tgi_batch_current_max_tokens',
      'Maximum tokens for the current batch',
      '',
      e.kv.usedBlocks * e.kv.blockSize,
    )
    w.counter('tgi_request_count', 'Total number of requests', '', st.requestsReceived)
    w.counter('tgi_request_success', 'Number of successful requests', '', done)
    w.counter('tgi_batch_inference_count', 'Inference calls per method (prefill or decode)', '', st.steps)
    w.histogram('tgi_request_duration', 'Total time spent processing the request (e2e latency)', '', h.e2e)
    w.histogram('tgi_request_queue_duration', 'Time spent in the queue per request', '', h.queue)
    w.histogram('tgi_request_inference_duration', 'Request inference duration', '', h.inference)
    w.histogram(
      'tgi_request_mean_time_per_token_duration',
      'Mean time per token per request (inter-token latency)',
      '',
      h.tpotRequest,
    )
    w.histogram('tgi_request_input_length', 'Input token length per request', '', h.promptTokens)
    w.histogram('tgi_request_generated_tokens', 'Generated tokens per request', '', h.generationTokens)
    return w.text()
  },
}
