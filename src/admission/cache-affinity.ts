/**
 * The dispatcher's choices for prefix routing (cache-hold.ts says why): whether a request's
 * home, the endpoint caching its prompt, is closed to it; how long to hold it for that home;
 * and, while the head's home is closed, which request behind it goes to its own open home
 * out of turn. Reads pool admission's parts; dispatches through `dispatch`.
 */
import type { BackendPool, EndpointView, Lease } from '../backends/types.js'
import type { Clock } from '../clock.js'
import { cacheHoldMs, type HoldInputs, homeCache, recomputeRefusalMs } from './cache-hold.js'
import type { ClassQueues } from './class-queues.js'
import type { EndpointGates } from './gate.js'
import type { PoolPredictor } from './pool-prediction.js'
import type { PrefixAwareness } from './prefix-awareness.js'
import type { TtftEstimator } from './ttft-estimator.js'
import type { Waiting } from './waiting.js'

/** Requests behind a head whose home is closed that may go first, per endpoint in the pool. */
const FOLLOWER_WINDOW = 2

/** A request's home (the endpoint caching its prompt), closed to it, and the views it was chosen among. */
export interface ClosedHome {
  readonly home: EndpointView
  readonly views: readonly EndpointView[]
}

/**
 * What weigh() found: its closed home, if any, and how long to hold it for that (0: go now
 * where it can); `refuseMs`: refuse it instead, its home reopening in that many ms (past
 * capacity, recomputed elsewhere it would cost more than twice what it costs at home).
 */
export interface Weighed {
  readonly closed: ClosedHome | undefined
  readonly holdMs: number
  readonly refuseMs?: number
}

const NOT_HELD: Weighed = { closed: undefined, holdMs: 0 }

export interface AffinityParts {
  readonly pool: BackendPool
  readonly prefix: PrefixAwareness
  readonly queues: ClassQueues<Waiting>
  readonly gates: EndpointGates
  readonly predictor: PoolPredictor
  readonly estimator: TtftEstimator
  readonly clock: Clock
  /** Past capacity, refuse rather than recompute elsewhere (admission.refuse_recompute). */
  readonly refuseRecompute: boolean
  /** The gates for a request (of its class; `floor`: its class is served under its floor). */
  readonly openFor: (w: Waiting, floor: boolean) => (v: EndpointView) => boolean
  /** Starts a request taken out of the queue on `lease`, after `waitedMs` queued. */
  readonly dispatch: (w: Waiting, lease: Lease, waitedMs: number) => void
}

export class CacheAffinity {
  /** Requests sent to their own open home ahead of a head whose home was closed. */
  outOfTurn = 0
  /** Requests refused past capacity rather than recomputed away from their closed home. */
  refusedRecompute = 0

  constructor(private readonly p: AffinityParts) {}

  /** Whether `w`'s home is closed to it (gates `open`), and how long to hold it for that home. */
  weigh(w: Waiting, open: (v: EndpointView) => boolean): Weighed {
    const closed = this.closedHome(w, open)
    if (closed === undefined) return NOT_HELD
    const h = this.holdInputs(w, open, closed)
    const home = homeCache(h) // once, for both verdicts
    const holdMs = cacheHoldMs(h, home)
    if (holdMs > 0) {
      w.heldSince ??= h.now
      return { closed, holdMs }
    }
    const refuseMs = this.p.refuseRecompute ? recomputeRefusalMs(h, w.promptTokens, home) : undefined
    if (refuseMs === undefined) return { closed, holdMs: 0 }
    this.refusedRecompute++
    return { closed, holdMs: 0, refuseMs }
  }

  /**
   * The head of class `name` cannot go to its home (closed): serve instead the oldest of
   * the few requests behind it whose own home is open, there ("Out of turn" in
   * cache-hold.ts). False when none is, or the head (not held: it could go elsewhere) was
   * passed over enough already.
   */
  dispatchFollower(
    name: string,
    floor: boolean,
    head: Waiting,
    headHeld: boolean,
    views: readonly EndpointView[],
  ): boolean {
    const p = this.p
    if (!headHeld && head.bypassed >= views.length) return false
    for (const w of p.queues.followers(name, FOLLOWER_WINDOW * views.length)) {
      if (w.blocks === undefined) continue
      const open = p.openFor(w, floor)
      const home = this.homeOf(w, views)
      if (home === undefined || !open(home)) continue
      const lease = p.pool.acquire(w.kvTokens, (v) => v.name === home.name && open(v), p.prefix.hint(w))
      if (lease === undefined) continue
      const out = p.queues.takeFrom(name, w)
      head.bypassed++
      this.outOfTurn++
      p.dispatch(w, lease, out?.waitedMs ?? 0)
      return true
    }
    return false
  }

  /**
   * With prefix routing: the endpoint caching `w`'s prompt (where the picker would send it
   * were every endpoint open) when the gates close that one to it; else undefined.
   */
  private closedHome(w: Waiting, open: (v: EndpointView) => boolean): ClosedHome | undefined {
    const p = this.p
    if (!p.prefix.routes || !p.prefix.enabled || w.blocks === undefined) return undefined
    const views = p.pool.views()
    // every endpoint open (most of the time below capacity): no home is closed
    if (views.length < 2 || views.every(open)) return undefined
    const home = this.homeOf(w, views)
    return home === undefined || open(home) ? undefined : { home, views }
  }

  /** Where the picker would send `w` were every endpoint of `views` open, when that one caches some of its prompt. */
  private homeOf(w: Waiting, views: readonly EndpointView[]): EndpointView | undefined {
    const home = this.p.pool.choose?.(views, w.kvTokens, this.p.prefix.hint(w))
    return home !== undefined && cachedAt(w, home) > 0 ? home : undefined
  }

  /** What cache-hold.ts weighs for `w`, its `home` closed to it by the gates `open`. */
  private holdInputs(
    w: Waiting,
    open: (v: EndpointView) => boolean,
    { home, views }: ClosedHome,
  ): HoldInputs & { readonly now: number } {
    const p = this.p
    const computeAt = p.prefix.computeAt(w.blocks, w.promptTokens)
    const now = p.clock.now()
    return {
      now,
      views,
      open,
      home,
      busy:
        p.queues.sizeOf(w.className) > 1 ||
        views.every((v) => v === home || !open(v) || p.gates.pendingAt(v.name) > 0),
      slackMs: w.dispatchBy - now,
      cachedAt: (v) => cachedAt(w, v),
      reopenInMs: (v) => p.predictor.reopenInMs(v, w.className, w.kvTokens, w.promptTokens, computeAt),
      msPerToken: p.estimator.msPerPromptToken(),
      heldMs: w.heldSince === undefined ? 0 : now - w.heldSince,
    }
  }
}

/** Prompt tokens `v` is expected to serve from its cache for `w`. */
function cachedAt(w: Waiting, v: EndpointView): number {
  return w.blocks === undefined ? 0 : (v.prefixCache?.expectedHit(w.blocks, w.promptTokens).cached ?? 0)
}
