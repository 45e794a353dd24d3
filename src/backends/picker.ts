/**
 * Picks one endpoint among candidates by the scorer: the lowest score wins; endpoints whose
 * scores tie (within a relative 1e-9) take turns, round robin per picker, so idle endpoints
 * share a burst instead of the first in the list taking it all. Infinity everywhere: none.
 */
import type { EndpointScorer, EndpointView, Lease } from './types.js'

/** What a pool's endpoint offers the picker: whether it may take a request, its view, a lease. */
export interface Pickable {
  usable(): boolean
  view(): EndpointView
  acquire(tokens: number): Lease
}

/** The views of the usable endpoints. */
export function usableViews(endpoints: readonly Pickable[]): EndpointView[] {
  const out: EndpointView[] = []
  for (const ep of endpoints) if (ep.usable()) out.push(ep.view())
  return out
}

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

  /**
   * A lease on the endpoint picked among the usable ones that `accept` takes (a pool's
   * acquire); undefined when none may take the request.
   */
  acquire(
    endpoints: readonly Pickable[],
    tokens: number,
    accept?: (view: EndpointView) => boolean,
  ): Lease | undefined {
    const candidates: Pickable[] = []
    const views: EndpointView[] = []
    for (const ep of endpoints) {
      if (!ep.usable()) continue
      const view = ep.view()
      if (accept !== undefined && !accept(view)) continue
      candidates.push(ep)
      views.push(view)
    }
    if (candidates.length === 0) return undefined
    const chosen = this.pick(views, tokens)
    return chosen < 0 ? undefined : candidates[chosen]!.acquire(tokens)
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
