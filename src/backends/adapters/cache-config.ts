/**
 * KV capacity from vLLM's `vllm:cache_config_info` info gauge (value 1, the config in labels).
 * Per series: the `kv_cache_size_tokens` label when a numeric one is present (newer vLLM),
 * else `num_gpu_blocks` x `block_size`; summed over series (one per engine core).
 * Labels that say "None" (before the engine profiled memory) are not numbers: undefined.
 */
import type { PromText } from '../prom-text.js'
import { labelNumber } from './select.js'

export function cacheConfigCapacity(text: PromText, name: string): number | undefined {
  const samples = text.samples.get(name)
  if (samples === undefined) return undefined
  let total = 0
  let seen = false
  for (const s of samples) {
    const direct = labelNumber(s, 'kv_cache_size_tokens')
    const blocks = labelNumber(s, 'num_gpu_blocks')
    const blockSize = labelNumber(s, 'block_size')
    const tokens =
      direct ?? (blocks !== undefined && blockSize !== undefined ? blocks * blockSize : undefined)
    if (tokens !== undefined) {
      total += tokens
      seen = true
    }
  }
  return seen ? total : undefined
}
