/**
 * Pool admission and its endpoints' engine facts (src/backends/engine-facts.ts): the
 * estimator's priors adopted from them, the least step the pool's engines give (for the
 * unreachable-TPOT check), and what a request's first token tells its endpoint's facts.
 */
import type { EstimatorPriorFacts, Fact } from '../backends/engine-facts.js'
import type { BackendPool } from '../backends/types.js'
import type { ClassConfig } from '../config/schema.js'
import type { EndpointGates } from './gate.js'
import { type UnreachableTpot, unreachableTpot } from './tpot-reachable.js'
import type { TtftEstimator } from './ttft-estimator.js'
import type { Waiting } from './waiting.js'

export class PoolFacts {
  private readonly pool: BackendPool
  private readonly classes: Record<string, ClassConfig>
  /** The priors (config or default): an endpoint without facts (a stand-in) has these. */
  readonly priors: EstimatorPriorFacts

  constructor(pool: BackendPool, classes: Record<string, ClassConfig>, priors: EstimatorPriorFacts) {
    this.pool = pool
    this.classes = classes
    this.priors = priors
  }

  /**
   * The estimator's priors from the endpoints' engine facts (their mean), and each
   * endpoint's step model's from its own, once they are learned; after a request ends and
   * after scrapes.
   */
  sync(estimator: TtftEstimator, gates: EndpointGates): void {
    let step = 0
    let rate = 0
    let n = 0
    for (const e of this.pool.endpoints()) {
      if (e.facts === undefined) continue
      const stepMs = e.facts.stepMs().value
      const prefillTokensPerS = e.facts.prefillTokensPerS().value
      gates.adoptStepPriors(e.name, stepMs, prefillTokensPerS)
      step += stepMs
      rate += prefillTokensPerS
      n++
    }
    if (n > 0) estimator.adoptPriors({ stepMs: step / n, prefillTokensPerS: rate / n })
  }

  /** The engine's least step: the fastest endpoint's step fact (the prior without facts). */
  leastStep(): Fact {
    let best: Fact | undefined
    for (const e of this.pool.endpoints()) {
      const s = e.facts?.leastStepMs() ?? e.facts?.stepMs()
      if (s !== undefined && (best === undefined || s.value < best.value)) best = s
    }
    return best ?? this.priors.stepMs
  }

  /** Classes whose TPOT objective no batch size holds on this pool's engines (tpot-reachable.ts). */
  unreachableTpot(): UnreachableTpot[] {
    return unreachableTpot(this.classes, this.leastStep())
  }
}

/**
 * A streamed request's first token: the prompt tokens its prefill met at its endpoint
 * (pending there at dispatch, its own to compute as the server counted them: `prompt`,
 * those sent after it that may have shared its step) against its time from dispatch, for
 * the endpoint's prefill rate; alone when it met no other prompt.
 */
export function observePrefill(w: Waiting, prompt: number, serverMs: number): void {
  const pending = w.pendingTokens
  w.facts?.observePrefill(pending + prompt + w.joinedTokens, serverMs, pending === 0 && w.joinedTokens === 0)
}
