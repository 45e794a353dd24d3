/**
 * Picks one endpoint among candidates by the scorer: the lowest score wins; endpoints whose
 * scores tie (within a relative 1e-9) take turns, round robin per picker, so idle endpoints
 * share a burst instead of the first in the list taking it all. Infinity everywhere: none.
 */
import type { EndpointScorer, EndpointView } from './types.js'

const TIE = 1e-9

export class Picker {
  private turn = 0

  constructor(private scorer: EndpointScorer) {}

  get scorerName(): string {
    return this.scorer.name
  }

  setScorer(scorer: EndpointScorer): void {
    this.scorer = scorer
  }

  /** Index of the chosen view, or -1 when none may take the request. */
  pick(views: readonly EndpointView[], tokens: number): number {
    if (views.length === 0) return -1
    const scores = new Array<number>(views.length)
    let best = Number.POSITIVE_INFINITY
    for (let i = 0; i < views.length; i++) {
      let s: number
      try {
        s = this.scorer.score(views[i]!, tokens)
      } catch {
        s = Number.POSITIVE_INFINITY // a scorer that breaks its contract must not break the request path
      }
      if (!(s >= 0)) s = Number.POSITIVE_INFINITY // NaN and negatives
      scores[i] = s
      if (s < best) best = s
    }
    if (best === Number.POSITIVE_INFINITY) return -1
    const limit = best + TIE * Math.max(1, best)
    const ties: number[] = []
    for (let i = 0; i < scores.length; i++) if (scores[i]! <= limit) ties.push(i)
    const chosen = ties[this.turn % ties.length]!
    this.turn = (this.turn + 1) % 1_000_000_007
    return chosen
  }
}
