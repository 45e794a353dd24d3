/**
 * A TPOT objective the engine cannot hold at any batch size: every decode step takes at
 * least one engine step with a single sequence (the step fact, src/backends/engine-facts.ts),
 * so an objective under it is missed by every request, however little the gateway admits.
 * Admission says so at startup and in /admin/state (`unreachableTpot`); `doctor` may call
 * this too. Pure: no state, no I/O.
 */
import type { Fact, FactSource } from '../backends/engine-facts.js'

export interface TpotObjective {
  readonly slo: { readonly tpot_ms?: number | undefined }
}

export interface UnreachableTpot {
  readonly class: string
  readonly tpotMs: number
  /** The least TPOT the engine gives: one step with one sequence, ms. */
  readonly leastTpotMs: number
  /** Where that step time came from. */
  readonly source: FactSource
}

/** The classes whose TPOT objective is under the engine's least step (`step`: the fastest endpoint's). */
export function unreachableTpot(
  classes: Readonly<Record<string, TpotObjective>>,
  step: Fact,
): UnreachableTpot[] {
  const out: UnreachableTpot[] = []
  for (const [name, c] of Object.entries(classes)) {
    const tpot = c.slo.tpot_ms
    if (tpot !== undefined && step.value > tpot)
      out.push({
        class: name,
        tpotMs: tpot,
        leastTpotMs: Math.round(step.value * 100) / 100,
        source: step.source,
      })
  }
  return out
}

/** The line admission logs for one such class. */
export function unreachableTpotMessage(pool: string, u: UnreachableTpot): string {
  return `the ${u.class} TPOT objective (${u.tpotMs} ms) is below the least TPOT pool ${pool}'s engine gives (${u.leastTpotMs} ms, one step with one sequence; ${u.source.replace('_', ' ')}): no batch size holds it, and every ${u.class} request there will miss it. Raise classes.${u.class}.slo.tpot_ms, or serve the model on faster hardware`
}
