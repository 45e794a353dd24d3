/**
 * llama.cpp server (`llama-server --metrics`). No labels; every gauge is rendered on each
 * request, so a missing one means this is not a llama.cpp /metrics (undefined, stale).
 *
 * - waiting = `llamacpp:requests_deferred` (requests waiting for a free slot)
 * - running = `llamacpp:requests_processing` (slots busy)
 * - kvUsage = `llamacpp:kv_cache_usage_ratio`, only from older builds that still export it
 * Not given: KV capacity, preemptions, prefix cache; KV usage on current builds. The ledger
 * stands in (with `capacity.kv_tokens`, e.g. the server's --ctx-size, when set). Its slots
 * (`--parallel`) are read from `GET /props`, not /metrics (engine-info.ts).
 */
import { defineAdapter } from './define.js'
import { meanOf, ratio, sumOf } from './select.js'

const WAITING = ['llamacpp:requests_deferred']
const RUNNING = ['llamacpp:requests_processing']
const KV = ['llamacpp:kv_cache_usage_ratio']

export const llamacppAdapter = defineAdapter({
  engine: 'llamacpp',
  unsupported: ['kvUsage', 'kvCapacityTokens', 'preemptionsTotal', 'prefixCache'],
  family: 'llamacpp:',
  metrics: [...WAITING, ...RUNNING, ...KV],
  read: (t) => ({
    waiting: sumOf(t, WAITING),
    running: sumOf(t, RUNNING),
    kvUsage: ratio(meanOf(t, KV)),
  }),
})
