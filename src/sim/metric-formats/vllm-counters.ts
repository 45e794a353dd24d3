import type { EngineStats } from '../engine-stats.js'
import type { SimProfile } from '../profile-schema.js'
import { labelPairs, type PromWriter } from './prom-text.js'

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

/** vllm:cache_config_info, the gauge adapters read KV blocks and block size from. */
export function writeCacheConfigInfo(
  w: PromWriter,
  pe: SimProfile['engine'],
  extra: readonly (readonly [string, string])[] = [],
): void {
  const info = labelPairs([
    ['block_size', String(pe.blockSize)],
    ['cache_dtype', 'auto'],
    ['enable_prefix_caching', pe.enablePrefixCaching ? 'True' : 'False'],
    ['gpu_memory_utilization', '0.9'],
    ['num_gpu_blocks', String(pe.numGpuBlocks)],
    ...extra,
  ])
  w.gauge('vllm:cache_config_info', 'Information of the LLMEngine CacheConfig', info, 1)
}
