/**
 * The serving contract, printed: for each pool and class, the model, the request limits,
 * the resources, the SLO targets and the safe zone (the concurrency and request rate per
 * replica at which KV headroom and the TPOT objective hold), from the engine's facts and the
 * step model. A static estimate: `slo-gateway plan` measures the rate in virtual time.
 */
import type { GatewayConfig } from '../config/schema.js'
import { factsJson } from './engine-facts.js'
import type { PoolSubject } from './finding.js'
import { round } from './finding.js'
import { largestBatchWithin } from './step-cost.js'
import type { TypicalLengths } from './workload-classes.js'

export interface SafeZone {
  /** Sequences per replica at once: the least of the bounds known. */
  readonly concurrency: number | undefined
  /** Which bound sets it: kv, max_num_seqs, tpot. */
  readonly boundBy: string | undefined
  readonly kvConcurrency: number | undefined
  readonly tpotConcurrency: number | undefined
  /**
   * Requests/s per replica: UTILIZATION x the least of Little's law at that concurrency and
   * the engine's time per request (prefill + its share of the decode steps).
   */
  readonly ratePerReplica: number | undefined
  /** A request's time at that concurrency: idle prefill + output x decode step, ms. */
  readonly requestMs: number | undefined
}

export interface ClassContract {
  readonly class: string
  readonly priority: number
  readonly slo: GatewayConfig['classes'][string]['slo']
  readonly maxKvUsage: number
  readonly limits: {
    readonly maxContextTokens?: number
    readonly maxTokens: number
    readonly degradedMaxTokens?: number
  }
  readonly typical: TypicalLengths
  readonly safeZone: SafeZone
}

export interface PoolContract {
  readonly pool: string
  readonly models: readonly string[]
  readonly engine: string
  readonly replicas: number
  readonly stepModel: string
  readonly facts: ReturnType<typeof factsJson>
  readonly classes: readonly ClassContract[]
}

/** The share of one replica's capacity the safe zone fills: the seeds' 20-30% headroom. */
export const UTILIZATION = 0.75

function safeZone(
  p: PoolSubject,
  c: GatewayConfig['classes'][string],
  t: TypicalLengths,
  margin: number,
): SafeZone {
  const kv = p.facts.kvCapacityTokens?.value
  const seqs = p.facts.maxNumSeqs?.value
  const reserve = t.promptTokens + t.outputTokens
  const ctx = t.promptTokens + t.outputTokens / 2
  const kvConcurrency =
    kv === undefined ? undefined : Math.max(1, Math.floor((kv * c.max_kv_usage) / reserve))
  const cap = Math.min(kvConcurrency ?? Number.POSITIVE_INFINITY, seqs ?? Number.POSITIVE_INFINITY)
  const tpot = c.slo.tpot_ms
  const tpotConcurrency =
    tpot === undefined || !p.cost.batchAware || !Number.isFinite(cap)
      ? undefined
      : largestBatchWithin(p.cost, tpot * (1 - margin), ctx, cap)
  const bounds: [string, number | undefined][] = [
    ['kv', kvConcurrency],
    ['max_num_seqs', seqs],
    ['tpot', tpotConcurrency],
  ]
  let concurrency: number | undefined
  let boundBy: string | undefined
  for (const [name, v] of bounds) {
    if (v !== undefined && (concurrency === undefined || v < concurrency)) {
      concurrency = v
      boundBy = name
    }
  }
  let requestMs: number | undefined
  let ratePerReplica: number | undefined
  if (concurrency !== undefined && concurrency > 0) {
    const step = p.cost.decodeStepMs(concurrency, ctx)
    requestMs = p.cost.idlePrefillMs(t.promptTokens) + t.outputTokens * step
    // Little's law at that concurrency, and the engine's own time per request (its prefill
    // and its share of the batch's decode steps), whichever binds; kept at UTILIZATION
    const little = (1000 * concurrency) / requestMs
    const engineMs = p.cost.idlePrefillMs(t.promptTokens) + (t.outputTokens * step) / concurrency
    ratePerReplica = round(UTILIZATION * Math.min(little, 1000 / engineMs), 2)
    requestMs = round(requestMs, 1)
  }
  return { concurrency, boundBy, kvConcurrency, tpotConcurrency, ratePerReplica, requestMs }
}

export function buildContract(
  config: GatewayConfig,
  pools: readonly PoolSubject[],
  typical: (className: string) => TypicalLengths,
): PoolContract[] {
  return pools.map((p) => ({
    pool: p.name,
    models: p.pool.models,
    engine: p.pool.engine,
    replicas: p.replicas,
    stepModel: p.cost.source,
    facts: factsJson(p.facts),
    classes: Object.entries(config.classes)
      .sort(([, a], [, b]) => a.priority - b.priority)
      .map(([name, c]) => {
        const cap = c.degrade.find((s) => s.action === 'cap_max_tokens')
        const maxContext = p.facts.maxModelLen?.value
        return {
          class: name,
          priority: c.priority,
          slo: c.slo,
          maxKvUsage: c.max_kv_usage,
          limits: {
            ...(maxContext === undefined ? {} : { maxContextTokens: maxContext }),
            maxTokens: config.admission.default_max_tokens,
            ...(cap?.action === 'cap_max_tokens' ? { degradedMaxTokens: cap.max_tokens } : {}),
          },
          typical: typical(name),
          safeZone: safeZone(p, c, typical(name), config.admission.margin),
        }
      }),
  }))
}
