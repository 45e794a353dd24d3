/**
 * The routing's Prometheus series, read from the pools' state when /metrics is scraped:
 *
 * - slo_gateway_prefix_predicted_hit_ratio{pool}   the share of the prompt tokens sent
 *     recently (the last ten or so scrapes with traffic) that the gateway predicted cached
 *     at the endpoint it sent them to; compare with the engines' own, measured:
 *     rate(slo_gateway_backend_prefix_cache_hits_total) / rate(..._queries_total)
 * - slo_gateway_prefix_predicted_hit_tokens_total{pool}, slo_gateway_prefix_prompt_tokens_total{pool}
 *     the same as counters, for rate() over any window (an endpoint that leaves takes its
 *     share: the counter resets, as Prometheus expects of counters)
 * - slo_gateway_prefix_routing_total{pool,decision}   picks of the prefix-affinity scorer, by
 *     why: affinity, session, saturated (the endpoint holding the most of the prompt was
 *     saturated or without headroom), load, none (no endpoint held any of it)
 */
import { Counter, Gauge, type Registry } from 'prom-client'
import type { Picker } from './picker.js'
import type { EndpointPool } from './pool.js'
import { DECISIONS, PrefixAffinityScorer } from './prefix-affinity.js'

export const ROUTING_METRICS = {
  predictedHitRatio: 'slo_gateway_prefix_predicted_hit_ratio',
  predictedHitTokens: 'slo_gateway_prefix_predicted_hit_tokens_total',
  promptTokens: 'slo_gateway_prefix_prompt_tokens_total',
  routing: 'slo_gateway_prefix_routing_total',
} as const

interface PoolPicker {
  readonly pool: EndpointPool
  readonly picker: Picker
}

function sums(pool: EndpointPool, recent: boolean): { hit: number; prompt: number } {
  let hit = 0
  let prompt = 0
  for (const ep of pool.allEndpoints()) {
    const pc = ep.prefixCache
    const s = recent ? pc.calibration.recent : pc.totals
    hit += s.hitTokens
    prompt += s.promptTokens
  }
  return { hit, prompt }
}

export function registerRoutingMetrics(registry: Registry, pools: () => readonly PoolPicker[]): void {
  new Gauge({
    name: ROUTING_METRICS.predictedHitRatio,
    help: 'Share of the prompt tokens sent recently that the gateway predicted cached at the endpoint it chose.',
    labelNames: ['pool'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const { pool } of pools()) {
        const s = sums(pool, true)
        if (s.prompt > 0) this.set({ pool: pool.name }, s.hit / s.prompt)
      }
    },
  })
  for (const [name, help, read] of [
    [ROUTING_METRICS.predictedHitTokens, 'Prompt tokens predicted cached at the endpoint chosen.', 'hit'],
    [
      ROUTING_METRICS.promptTokens,
      'Prompt tokens sent by prefix-aware admission (the denominator).',
      'prompt',
    ],
  ] as const) {
    new Counter({
      name,
      help,
      labelNames: ['pool'] as const,
      registers: [registry],
      collect() {
        this.reset()
        for (const { pool } of pools()) this.inc({ pool: pool.name }, sums(pool, false)[read])
      },
    })
  }
  new Counter({
    name: ROUTING_METRICS.routing,
    help: 'Requests routed by the prefix-affinity scorer, by why they went where they went.',
    labelNames: ['pool', 'decision'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const { pool, picker } of pools()) {
        const s = picker.currentScorer
        if (!(s instanceof PrefixAffinityScorer)) continue
        for (const d of DECISIONS) this.inc({ pool: pool.name, decision: d }, s.decisions[d])
      }
    },
  })
}
