/**
 * TensorRT-LLM `trtllm-serve`. Two formats, both read:
 *
 * 1. Prometheus text (current releases, at `/prometheus/metrics`: set the pool's
 *    `metrics_path`). Labels `model_name`, `engine_type`. Prefix `trtllm_` (Dynamo re-exports
 *    them as `trtllm:`; both are read).
 *    - waiting = sum `trtllm_num_requests_waiting`, running = sum `trtllm_num_requests_running`
 *    - kvUsage = mean `trtllm_kv_cache_utilization`
 *    - kvCapacityTokens = sum `trtllm_kv_cache_max_blocks` x mean `trtllm_kv_cache_tokens_per_block`
 *    - blockSize = mean `trtllm_kv_cache_tokens_per_block`
 *    - prefix cache in blocks: hits = `trtllm_kv_cache_reused_blocks_total`,
 *      queries = reused + `trtllm_kv_cache_missed_blocks_total`
 * 2. The JSON iteration stats of `/metrics` (older releases): an array of per-iteration
 *    objects since the previous call. The last one is read: `numQueuedRequests`,
 *    `numActiveRequests`, `kvCacheStats.{usedNumBlocks,maxNumBlocks,tokensPerBlock}`. An
 *    empty array means no iteration ran since the last scrape: the engine is idle (0, 0).
 * Not given: preemptions.
 */
import { isRecord } from '../../is-record.js'
import { defineAdapter, type LoadFields } from './define.js'
import { meanOf, ratio, sumOf } from './select.js'

const both = (name: string) => [`trtllm_${name}`, `trtllm:${name}`]
const WAITING = both('num_requests_waiting')
const RUNNING = both('num_requests_running')
const KV = both('kv_cache_utilization')
const MAX_BLOCKS = both('kv_cache_max_blocks')
const TOKENS_PER_BLOCK = both('kv_cache_tokens_per_block')
const REUSED = both('kv_cache_reused_blocks_total')
const MISSED = both('kv_cache_missed_blocks_total')

const count = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined

function readIterationStats(body: string): LoadFields | undefined | null {
  const head = body.trimStart()[0]
  if (head !== '[' && head !== '{') return null
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return null // maybe an OpenMetrics line with a quoted name: let the text parser try
  }
  const list = Array.isArray(value) ? value : [value]
  if (list.length === 0) return { waiting: 0, running: 0 }
  const last = list[list.length - 1]
  if (!isRecord(last)) return undefined
  const kv = isRecord(last.kvCacheStats) ? last.kvCacheStats : {}
  const used = count(kv.usedNumBlocks)
  const max = count(kv.maxNumBlocks)
  const perBlock = count(kv.tokensPerBlock)
  return {
    waiting: count(last.numQueuedRequests),
    running: count(last.numActiveRequests),
    kvUsage: used !== undefined && max !== undefined && max > 0 ? ratio(used / max) : undefined,
    kvCapacityTokens: max !== undefined && perBlock !== undefined && max > 0 ? max * perBlock : undefined,
  }
}

export const trtllmAdapter = defineAdapter({
  engine: 'trtllm',
  unsupported: ['preemptionsTotal'],
  family: 'trtllm',
  metrics: [...WAITING, ...RUNNING, ...KV, ...MAX_BLOCKS, ...TOKENS_PER_BLOCK, ...REUSED, ...MISSED],
  readRaw: readIterationStats,
  read: (t) => {
    const blocks = sumOf(t, MAX_BLOCKS)
    const perBlock = meanOf(t, TOKENS_PER_BLOCK)
    const reused = sumOf(t, REUSED)
    const missed = sumOf(t, MISSED)
    return {
      waiting: sumOf(t, WAITING),
      running: sumOf(t, RUNNING),
      kvUsage: ratio(meanOf(t, KV)),
      kvCapacityTokens:
        blocks !== undefined && perBlock !== undefined && blocks > 0 ? blocks * perBlock : undefined,
      blockSize: perBlock !== undefined && perBlock > 0 ? perBlock : undefined,
      prefixCacheHitsTotal: reused,
      prefixCacheQueriesTotal: reused !== undefined && missed !== undefined ? reused + missed : undefined,
    }
  },
})
