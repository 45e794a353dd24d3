/**
 * The requests of a plan run: the bench workload's own seeded sequence (loadgen's
 * RequestPlan: the same seed gives the same requests at any rate), each with the gateway
 * class it is classified into and the objectives it is judged by (its workload class's, as
 * `slo-gateway bench` judges it).
 */

import { RequestPlan } from '../../loadgen/request-plan.js'
import type { LoadedWorkload } from '../../loadgen/workload-load.js'
import type { SloSpec } from '../../loadgen/workload-schema.js'
import { tablesOf } from '../workload-classes.js'

export interface PlanRequest {
  readonly index: number
  readonly arrivalMs: number
  /** The workload class's index and name. */
  readonly classIndex: number
  readonly className: string
  /** Sent as x-priority / service_tier. */
  readonly priority: string | undefined
  readonly serviceTier: string | undefined
  readonly demotable: boolean
  readonly tenant: string
  readonly promptTokens: number
  readonly maxTokens: number
  readonly slo: SloSpec
}

/** Requests arriving in [0, durationMs) at `ratePerS` (the workload's arrival process). */
export function* planRequests(w: LoadedWorkload, ratePerS: number, durationMs: number, seed?: number) {
  const plan = new RequestPlan(w.workload, tablesOf(w), ratePerS, seed ?? w.workload.seed)
  for (;;) {
    const r = plan.next()
    if (r.dueMs >= durationMs) return
    const c = w.workload.classes[r.classIndex]!
    const tenant = r.tenantIndex === undefined ? 'default' : w.workload.tenants[r.tenantIndex]!.name
    const out: PlanRequest = {
      index: r.index,
      arrivalMs: r.dueMs,
      classIndex: r.classIndex,
      className: c.name,
      priority: c.priority,
      serviceTier: c.service_tier,
      demotable: c.headers?.['x-gateway-allow-demotion'] === 'true',
      tenant,
      promptTokens: r.promptTokens + (c.system_prompt_tokens ?? 0),
      maxTokens: r.outputTokens,
      slo: c.slo,
    }
    yield out
  }
}
