/**
 * SGLang. Labels: `model_name`, `engine_type`, `tp_rank`, `pp_rank` (and `dp_rank`,
 * `moe_ep_rank` where used). Tensor/pipeline/expert-parallel ranks may each report the same
 * scheduler state, so `tp_rank`, `pp_rank`, `moe_ep_rank` are replica labels (deduplicated
 * by max); data-parallel ranks (`dp_rank`) are separate schedulers and are summed.
 *
 * - waiting  = sum `sglang:num_queue_reqs`
 * - running  = sum `sglang:num_running_reqs`
 * - kvUsage  = mean `sglang:token_usage` (0..1)
 * - kvCapacityTokens = sum `sglang:max_total_num_tokens`
 * - preemptionsTotal = sum `sglang:num_retracted_requests_total` (retractions), when present
 * Not given: prefix cache counters (SGLang reports a hit-rate gauge only).
 *
 * SGLang creates its scheduler gauges on the first scheduler report, so a server that has
 * served nothing may not list them: in a readable exposition an absent queue or running
 * gauge counts as 0. Unreadable text is still undefined (stale).
 */
import { defineAdapter } from './define.js'
import { meanOf, ratio, type SelectOptions, sumOf } from './select.js'

const BY_RANK: SelectOptions = { replicaLabels: ['tp_rank', 'pp_rank', 'moe_ep_rank', 'attn_tp_rank'] }
const WAITING = ['sglang:num_queue_reqs']
const RUNNING = ['sglang:num_running_reqs']
const KV = ['sglang:token_usage']
const CAPACITY = ['sglang:max_total_num_tokens']
const RETRACTED = ['sglang:num_retracted_requests_total']

export const sglangAdapter = defineAdapter({
  engine: 'sglang',
  unsupported: ['prefixCache'],
  family: 'sglang:',
  metrics: [...WAITING, ...RUNNING, ...KV, ...CAPACITY, ...RETRACTED],
  read: (t) => ({
    waiting: sumOf(t, WAITING, BY_RANK) ?? 0,
    running: sumOf(t, RUNNING, BY_RANK) ?? 0,
    kvUsage: ratio(meanOf(t, KV, BY_RANK)),
    kvCapacityTokens: sumOf(t, CAPACITY, BY_RANK),
    preemptionsTotal: sumOf(t, RETRACTED, BY_RANK),
  }),
})
