/**
 * Hugging Face TGI (text-generation-inference router, metrics-exporter-prometheus: no
 * labels on these gauges, counters without `_total`).
 *
 * - waiting = sum `tgi_queue_size`
 * - running = sum `tgi_batch_current_size`
 * Not given: KV usage and capacity, preemptions, prefix cache; the gateway's ledger stands in
 * (with `capacity.kv_tokens` from the pool config when set).
 *
 * The exporter only lists a gauge once it has been set, so an idle TGI that has served
 * nothing shows neither: in a readable exposition an absent gauge counts as 0.
 */
import { defineAdapter } from './define.js'
import { sumOf } from './select.js'

const WAITING = ['tgi_queue_size']
const RUNNING = ['tgi_batch_current_size']

export const tgiAdapter = defineAdapter({
  engine: 'tgi',
  unsupported: ['kvUsage', 'kvCapacityTokens', 'preemptionsTotal', 'prefixCache'],
  family: 'tgi_',
  metrics: [...WAITING, ...RUNNING],
  read: (t) => ({
    waiting: sumOf(t, WAITING) ?? 0,
    running: sumOf(t, RUNNING) ?? 0,
  }),
})
