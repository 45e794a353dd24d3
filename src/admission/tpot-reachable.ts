/**
 * A TPOT objective the engine cannot hold at any batch size: every decode step takes at
 * least one engine step with a single sequence, so an objective under it is missed by every
 * request, however little the gateway admits. The one judgment of it, used by both:
 *
 * - admission, with the step it learned (the step fact, src/backends/engine-facts.ts): at
 *   startup and in /admin/state (`unreachableTpot`);
 * - `slo-gateway doctor` (src/contract/findings/latency.ts), with the step a simulator
 *   profile's step model gives one sequence at the class's typical context, or the priors.
 *
 * Pure: no state, no I/O.
 */
import type { FactSource } from '../backends/engine-facts.js'

export interface TpotObjective {
  readonly slo: { readonly tpot_ms?: number | undefined }
}

/** One engine step with a single sequence, ms, and where it came from (a learned fact's source, a profile's name). */
export interface LeastStep<S> {
  readonly value: number
  readonly source: S
}

export interface UnreachableTpot<S = FactSource> {
  readonly class: string
  readonly tpotMs: number
  /** The least TPOT the engine gives: one step with one sequence, ms. */
  readonly leastTpotMs: number
  /** Where that step time came from. */
  readonly source: S
}

/** The classes whose TPOT objective is under the engine's least step (`step`: the fastest endpoint's). */
export function unreachableTpot<S = FactSource>(
  classes: Readonly<Record<string, TpotObjective>>,
  step: LeastStep<S>,
): UnreachableTpot<S>[] {
  const out: UnreachableTpot<S>[] = []
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
