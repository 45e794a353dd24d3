/**
 * KV capacity from vLLM's `vllm:cache_config_info` info gauge (value 1, the config in labels).
 * Per series: the `kv_cache_size_tokens` label when a numeric one is present (newer vLLM),
 * else `num_gpu_blocks` x `block_size`; summed over series (one per engine core).
 * Labels that say "None" (before the engine profiled memory) are not numbers: undefined.
 * The same gauge gives the block size (the prefix cache's unit) and whether prefix caching
 * is on (`enable_prefix_caching`); see cacheConfigBlocks.
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

/**
 * The prefix cache's facts from the same gauge: `block_size` (the largest over series; one
 * engine, one size) and `enable_prefix_caching` ("True"/"False"; on when any series says
 * True). Undefined where no series says.
 */
export function cacheConfigBlocks(
  text: PromText,
  name: string,
): { blockSize: number | undefined; prefixCaching: boolean | undefined } {
  let blockSize: number | undefined
  let prefixCaching: boolean | undefined
  for (const s of text.samples.get(name) ?? []) {
    const b = labelNumber(s, 'block_size')
    if (b !== undefined) blockSize = Math.max(blockSize ?? 0, b)
    const on = s.labels.enable_prefix_caching
    if (on === 'True' || on === 'true') prefixCaching = true
    else if ((on === 'False' || on === 'false') && prefixCaching === undefined) prefixCaching = false
  }
  return { blockSize, prefixCaching }
}
