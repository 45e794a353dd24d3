/**
 * What admission says at startup (and once more when a learned engine fact reveals it):
 * objectives no request can meet on a pool's servers. Each is logged once per pool and class
 * (per tenant for tenants' own objectives). And, once per pool, first tokens that came far
 * later than predicted, with their likely cause.
 */
import type { GatewayConfig } from '../config/schema.js'
import { tenantObjectives } from '../objectives.js'
import type { PoolAdmission } from './pool-admission.js'
import { unreachableTpotMessage } from './tpot-reachable.js'

export interface AdmissionLogger {
  warn(obj: object, msg?: string): void
}

/** TTFT objectives (the classes', the tenants' own) no request meets on this pool, even on an idle server. */
export function warnUnreachableTtft(
  pa: PoolAdmission,
  config: GatewayConfig,
  logger?: AdmissionLogger,
): void {
  const pool = pa.pool.name
  // every request of such a class is refused with ttft_unreachable (x-should-retry: false)
  for (const u of pa.predictor.unreachableObjectives()) {
    logger?.warn(
      { pool, ...u },
      `the ${u.class} TTFT objective (${u.sloMs} ms) is below the least TTFT pool ${pool} is predicted to give (${u.idleTtftMs} ms, an idle server); every ${u.class} request there will be refused (ttft_unreachable). Raise classes.${u.class}.slo.ttft_ms, or set admission.estimator priors that match the servers`,
    )
  }
  // and what no request of a tenant whose override is tighter will get
  for (const [index, tenant] of config.tenants.entries()) {
    const own = tenantObjectives(tenant.slo, config.classes) ?? {}
    for (const [name, o] of Object.entries(own)) {
      const idle = o.ttft_ms === undefined ? undefined : pa.predictor.unreachableMs(name, 1, o.ttft_ms)
      if (idle === undefined) continue
      logger?.warn(
        { pool, tenant: tenant.id, class: name, sloMs: o.ttft_ms, idleTtftMs: Math.round(idle) },
        `tenant ${tenant.id}'s ${name} TTFT objective (${o.ttft_ms} ms) is below the least TTFT pool ${pool} is predicted to give (${Math.round(idle)} ms, an idle server); every ${name} request of ${tenant.id} there will be refused (ttft_unreachable). Raise tenants[${index}].slo.${name}.ttft_ms`,
      )
    }
  }
}

/**
 * TPOT objectives no batch size holds on this pool's engines (tpot-reachable.ts), each once:
 * `said` remembers what was logged (at startup by the priors, later by a learned step time).
 */
export function warnUnreachableTpot(pa: PoolAdmission, said: Set<string>, logger?: AdmissionLogger): void {
  for (const u of pa.facts.unreachableTpot()) {
    const key = `${pa.pool.name}\u0000${u.class}`
    if (said.has(key)) continue
    said.add(key)
    logger?.warn({ pool: pa.pool.name, ...u }, unreachableTpotMessage(pa.pool.name, u))
  }
}

/**
 * Once per pool, when the TTFT estimator first leaves out a server time far over its
 * prediction (ttft-estimator.ts) and the pool does not set `capacity.max_num_seqs`: the
 * likeliest cause is a server that runs fewer requests at once than the gateway sends it.
 */
export function warnServerWaits(pa: PoolAdmission, said: Set<string>, logger?: AdmissionLogger): void {
  const pool = pa.pool.name
  const outliers = pa.estimator.outliersNotLearned
  if (outliers === 0 || said.has(pool)) return
  said.add(pool)
  if (pa.pool.views().some((v) => v.capacity.maxNumSeqs !== undefined)) return
  logger?.warn(
    { pool, outliersNotLearned: outliers },
    `a first token at pool ${pool} came far later than predicted (more than 3x, and 4 engine steps over): the request most likely waited at the server for a batch slot. A server that runs fewer requests at once than it is sent does this (llama.cpp --parallel, SGLang --max-running-requests): set backends.pools[].capacity.max_num_seqs to its limit, so the rest wait in the gateway's queue, where they are predicted`,
  )
}
