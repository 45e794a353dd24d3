/**
 * vLLM V0 engine (vLLM <= 0.7, or VLLM_USE_V1=0). Labels: `model_name`.
 *
 * - waiting  = sum `vllm:num_requests_waiting` + sum `vllm:num_requests_swapped`
 *   (swapped requests were preempted to CPU and wait to resume, ahead of new ones)
 * - running  = sum `vllm:num_requests_running`
 * - kvUsage  = mean `vllm:gpu_cache_usage_perc`
 * - kvCapacityTokens from `vllm:cache_config_info` (num_gpu_blocks x block_size), and its
 *   blockSize and prefixCaching (`enable_prefix_caching`)
 * - preemptionsTotal = sum `vllm:num_preemptions_total`
 * Not given: prefix cache counters (V0 only has a hit-rate gauge).
 */
import { cacheConfigBlocks, cacheConfigCapacity } from './cache-config.js'
import { defineAdapter } from './define.js'
import { meanOf, ratio, sumOf } from './select.js'

const WAITING = ['vllm:num_requests_waiting']
const SWAPPED = ['vllm:num_requests_swapped']
const RUNNING = ['vllm:num_requests_running']
const KV = ['vllm:gpu_cache_usage_perc']
const CACHE_CONFIG = 'vllm:cache_config_info'
const PREEMPTIONS = ['vllm:num_preemptions_total']

export const vllmV0Adapter = defineAdapter({
  engine: 'vllm-v0',
  unsupported: ['prefixCache'],
  family: 'vllm:',
  metrics: [...WAITING, ...SWAPPED, ...RUNNING, ...KV, CACHE_CONFIG, ...PREEMPTIONS],
  read: (t) => {
    const waiting = sumOf(t, WAITING)
    return {
      waiting: waiting === undefined ? undefined : waiting + (sumOf(t, SWAPPED) ?? 0),
      running: sumOf(t, RUNNING),
      kvUsage: ratio(meanOf(t, KV)),
      kvCapacityTokens: cacheConfigCapacity(t, CACHE_CONFIG),
      ...cacheConfigBlocks(t, CACHE_CONFIG),
      ...cacheConfigBlocks(t, CACHE_CONFIG),
      preemptionsTotal: sumOf(t, PREEMPTIONS),
    }
  },
})
