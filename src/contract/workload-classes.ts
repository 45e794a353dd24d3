/**
 * A bench workload as the gateway will see it: which gateway class each workload class
 * lands in (its `priority` is sent as `x-priority`; `service_tier: flex` is batch; else
 * interactive, the gateway's default), and the typical prompt and output of each.
 */

import { RequestPlan } from '../loadgen/request-plan.js'
import type { LoadedWorkload } from '../loadgen/workload-load.js'
import { tableKey } from '../loadgen/workload-load.js'
import type { ClassSpec } from '../loadgen/workload-schema.js'

/** Typical lengths of one class's requests, in tokens (means over a seeded sample). */
export interface TypicalLengths {
  readonly promptTokens: number
  readonly outputTokens: number
}

/** Without a workload: a 512-token prompt (the estimator's prior) and a 512-token answer. */
export const DEFAULT_TYPICAL: TypicalLengths = { promptTokens: 512, outputTokens: 512 }

/** The gateway class a workload class's requests are classified into. */
export function gatewayClassOf(c: Pick<ClassSpec, 'priority' | 'service_tier'>): string {
  if (c.priority !== undefined) return c.priority
  if (c.service_tier === 'flex') return 'batch'
  return 'interactive'
}

/** A lookup of a workload's `dist: file` tables (for RequestPlan). */
export function tablesOf(w: LoadedWorkload) {
  return (spec: { path: string; field?: string | undefined }): readonly number[] =>
    w.tables.get(tableKey(w.file, spec)) ?? []
}

/** Mean prompt (with its system prompt) and output per gateway class, over `samples` draws. */
export function typicalByClass(w: LoadedWorkload, samples = 4000): Map<string, TypicalLengths> {
  const plan = new RequestPlan(w.workload, tablesOf(w), 1)
  const sums = new Map<string, { p: number; o: number; n: number }>()
  for (let i = 0; i < samples; i++) {
    const r = plan.next()
    const c = w.workload.classes[r.classIndex]!
    const name = gatewayClassOf(c)
    const s = sums.get(name) ?? { p: 0, o: 0, n: 0 }
    s.p += r.promptTokens + (c.system_prompt_tokens ?? 0)
    s.o += r.outputTokens
    s.n++
    sums.set(name, s)
  }
  const out = new Map<string, TypicalLengths>()
  for (const [name, s] of sums)
    out.set(name, { promptTokens: Math.round(s.p / s.n), outputTokens: Math.round(s.o / s.n) })
  return out
}

/** The mean of the classes' typical lengths (plan's first guess of capacity). */
export function typicalOverClasses(w: LoadedWorkload): TypicalLengths {
  const typical = [...typicalByClass(w).values()]
  const mean = (k: keyof TypicalLengths) => typical.reduce((s, t) => s + t[k], 0) / typical.length
  return { promptTokens: mean('promptTokens'), outputTokens: mean('outputTokens') }
}
