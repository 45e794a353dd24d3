/**
 * vLLM V1 engine (vLLM >= 0.8 default). Labels: `model_name`, `engine` (one series per
 * engine core under data parallelism); counters carry `_total`.
 *
 * - waiting  = sum `vllm:num_requests_waiting`
 * - running  = sum `vllm:num_requests_running`
 * - kvUsage  = mean `vllm:kv_cache_usage_perc` (0..1; `vllm:gpu_cache_usage_perc` before 0.9)
 * - kvCapacityTokens, blockSize, prefixCaching from `vllm:cache_config_info` (see cache-config.ts)
 * - preemptionsTotal = sum `vllm:num_preemptions_total`
 * - prefix cache = `vllm:prefix_cache_queries_total` / `vllm:prefix_cache_hits_total`
 *   (`vllm:gpu_prefix_cache_*` before 0.9), in tokens.
 * - engine facts (step-facts.ts): prefill time and prompt tokens of finished requests, the
 *   largest step (`vllm:iteration_tokens_total`).
 * Gives every BackendLoad field.
 */
import { cacheConfigBlocks, cacheConfigCapacity } from './cache-config.js'
import { defineAdapter } from './define.js'
import { meanOf, ratio, sumOf } from './select.js'
import { readStepFacts, STEP_FACT_METRICS } from './step-facts.js'

const WAITING = ['vllm:num_requests_waiting']
const RUNNING = ['vllm:num_requests_running']
const KV = ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc']
const CACHE_CONFIG = 'vllm:cache_config_info'
const PREEMPTIONS = ['vllm:num_preemptions_total']
const PREFIX_QUERIES = ['vllm:prefix_cache_queries_total', 'vllm:gpu_prefix_cache_queries_total']
const PREFIX_HITS = ['vllm:prefix_cache_hits_total', 'vllm:gpu_prefix_cache_hits_total']

export const vllmAdapter = defineAdapter({
  engine: 'vllm',
  unsupported: [],
  family: 'vllm:',
  metrics: [
    ...WAITING,
    ...RUNNING,
    ...KV,
    CACHE_CONFIG,
    ...PREEMPTIONS,
    ...PREFIX_QUERIES,
    ...PREFIX_HITS,
    ...STEP_FACT_METRICS,
  ],
  read: (t) => ({
    waiting: sumOf(t, WAITING),
    running: sumOf(t, RUNNING),
    kvUsage: ratio(meanOf(t, KV)),
    kvCapacityTokens: cacheConfigCapacity(t, CACHE_CONFIG),
    ...cacheConfigBlocks(t, CACHE_CONFIG),
    preemptionsTotal: sumOf(t, PREEMPTIONS),
    prefixCacheQueriesTotal: sumOf(t, PREFIX_QUERIES),
    prefixCacheHitsTotal: sumOf(t, PREFIX_HITS),
    ...readStepFacts(t),
  }),
})
