/**
 * Picks one endpoint among candidates by the scorer: the lowest score wins; endpoints whose
 * scores tie (within a relative 1e-9) take turns, round robin per picker, so idle endpoints
 * share a burst instead of the first in the list taking it all. Infinity everywhere: none.
 *
 * `pick` takes a turn (the caller leases the endpoint, then tells `picked`); `peek` answers
 * the same question with no side effect, for admission's prediction of where a request
 * will go: asked and then picked with nothing changed between, both choose the same one.
 */
import type { EndpointScorer, EndpointView, Lease, PickRequest, PoolLoad } from './types.js'

/** What a pool's endpoint offers the picker: whether it may take a request, its view, a lease. */
export interface Pickable {
  usable(): boolean
  view(): EndpointView
  acquire(tokens: number, request?: PickRequest): Lease
}

/** The views of the usable endpoints. */
export function usableViews(endpoints: readonly Pickable[]): EndpointView[] {
  const out: EndpointView[] = []
  for (const ep of endpoints) if (ep.usable()) out.push(ep.view())
  return out
}

const TIE = 1e-9

export function poolLoad(views: readonly EndpointView[]): PoolLoad {
  let inflightRequests = 0
  for (const v of views) inflightRequests += v.effective.inflightRequests
  return { inflightRequests, endpoints: views.length }
}

export class Picker {
  private turn = 0

  constructor(private scorer: EndpointScorer) {}

  get scorerName(): string {
    return this.scorer.name
  }

  /** The scorer reads prompt prefixes (prefix-affinity). */
  get readsPrefix(): boolean {
    return this.scorer.readsPrefix === true
  }

  get currentScorer(): EndpointScorer {
    return this.scorer
  }

  setScorer(scorer: EndpointScorer): void {
    this.scorer = scorer
  }

  /**
   * A lease on the endpoint picked among the usable ones that `accept` takes (a pool's
   * acquire); undefined when none may take the request. The scorer is told of the pick.
   */
  acquire(
    endpoints: readonly Pickable[],
    tokens: number,
    accept?: (view: EndpointView) => boolean,
    request?: PickRequest,
  ): Lease | undefined {
    const candidates: Pickable[] = []
    const views: EndpointView[] = []
    const excluded: EndpointView[] = []
    for (const ep of endpoints) {
      if (!ep.usable()) continue
      const view = ep.view()
      if (accept !== undefined && !accept(view)) {
        excluded.push(view)
        continue
      }
      candidates.push(ep)
      views.push(view)
    }
    if (candidates.length === 0) return undefined
    const chosen = this.pick(views, tokens, request)
    if (chosen < 0) return undefined
    const lease = candidates[chosen]!.acquire(tokens, request)
    this.picked(views, chosen, excluded, tokens, request)
    return lease
  }

  /** Index of the chosen view, or -1 when none may take the request; takes a turn. */
  pick(views: readonly EndpointView[], tokens: number, request?: PickRequest): number {
    const chosen = this.peek(views, tokens, request)
    if (chosen >= 0) this.turn = (this.turn + 1) % 1_000_000_007
    return chosen
  }

  /** What `pick` would answer now, without taking a turn. */
  peek(views: readonly EndpointView[], tokens: number, request?: PickRequest): number {
    if (views.length === 0) return -1
    const pool = poolLoad(views)
    const scores = new Array<number>(views.length)
    let best = Number.POSITIVE_INFINITY
    for (let i = 0; i < views.length; i++) {
      let s: number
      try {
        s = this.scorer.score(views[i]!, tokens, request, pool)
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
    return ties[this.turn % ties.length]!
  }

  /** A lease was taken on `views[chosen]`: the scorer's hook, if it has one (never throws). */
  picked(
    views: readonly EndpointView[],
    chosen: number,
    excluded: readonly EndpointView[],
    tokens: number,
    request: PickRequest | undefined,
  ): void {
    const view = views[chosen]
    if (view === undefined || this.scorer.picked === undefined) return
    try {
      this.scorer.picked(view, views, excluded, tokens, request)
    } catch {
      // its memory is its own; the request goes on
    }
  }

  state(): object {
    return { name: this.scorer.name, ...(this.scorer.state?.() ?? {}) }
  }
}
