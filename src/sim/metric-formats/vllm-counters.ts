import type { EngineStats } from '../engine-stats.js'
import type { PromWriter } from './prom-text.js'

/** The counters vLLM V0 and V1 both export, with the same names, help and labels. */
export function writeVllmCounters(w: PromWriter, l: string, st: EngineStats): void {
  w.counter(
    'vllm:num_preemptions_total',
    'Cumulative number of preemption from the engine.',
    l,
    st.preemptions,
  )
  w.counter('vllm:prompt_tokens_total', 'Number of prefill tokens processed.', l, st.promptTokens)
  w.counter('vllm:generation_tokens_total', 'Number of generation tokens processed.', l, st.generationTokens)
  w.header('vllm:request_success_total', 'Count of successfully processed requests.', 'counter')
  for (const reason of ['stop', 'length', 'abort'] as const) {
    w.sample('vllm:request_success_total', `${l},finished_reason="${reason}"`, st.finished[reason])
  }
}
