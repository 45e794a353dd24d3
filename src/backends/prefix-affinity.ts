/**
 * The prefix-affinity scorer: the least-wait load score (scorer.ts) plus what the endpoint
 * is missing of the request's prompt, weighted:
 *
 *   score = load_weight · leastWait(view) + prefix_weight · (1 − affinity(view))
 *
 *   affinity = the share of the prompt's tokens the endpoint is expected to hold in its
 *              prefix cache (the gateway's index of the blocks it sent there, trusted as far
 *              as the engine's counters confirm it: prefix-index.ts, prefix-calibration.ts);
 *              1 for the endpoint the request's session (`x-session-id`) was last sent to;
 *              0 for a saturated endpoint (KV usage after the request, or the share of batch
 *              slots in flight, at `saturation` or more; or more requests in flight than
 *              `max_load_ratio` times its share of the candidates'), so one hot prefix
 *              cannot melt one replica: past its headroom, an endpoint competes on load alone.
 *
 * With prefix_weight 2 a full match is worth two requests queued at the server: an idle
 * replica holding nothing of the prompt does not beat one that holds it and runs a batch,
 * but one with a queue does. A request without blocks (no prefix awareness, a request
 * that does not generate) is scored on load alone: the same order as least-wait.
 *
 * It counts every pick by why it went where it went (`decisions`): `affinity` (to the
 * endpoint holding the most of the prompt), `session`, `saturated` (the endpoint holding
 * the most was saturated or had no headroom by admission's gate, so it went elsewhere),
 * `load` (affinity was there but the load outweighed it), `none` (no endpoint held any).
 */
import type { RoutingConfig } from '../config/routing.js'
import { poolLoad } from './picker.js'
import { DEFAULT_BATCH_SLOTS, leastWaitScorer } from './scorer.js'
import { SessionTable } from './session-table.js'
import type { EndpointScorer, EndpointView, PickRequest, PoolLoad } from './types.js'

export const DECISIONS = ['affinity', 'session', 'saturated', 'load', 'none'] as const
export type Decision = (typeof DECISIONS)[number]

/** Why an endpoint lost its affinity: admission's gate closed it, or which saturation test. */
export const OVERRIDES = ['gate', 'load_ratio', 'slots', 'kv'] as const
export type Override = (typeof OVERRIDES)[number]

const EPS = 1e-9

type Options = Pick<
  RoutingConfig,
  'prefix_weight' | 'load_weight' | 'saturation' | 'max_load_ratio' | 'session_affinity' | 'max_sessions'
>

export class PrefixAffinityScorer implements EndpointScorer {
  readonly name = 'prefix-affinity'
  readonly readsPrefix = true
  readonly sessions: SessionTable
  readonly decisions: Record<Decision, number> = { affinity: 0, session: 0, saturated: 0, load: 0, none: 0 }
  /** The `saturated` decisions by why the endpoint holding the most lost its affinity. */
  readonly overrides: Record<Override, number> = { gate: 0, load_ratio: 0, slots: 0, kv: 0 }

  constructor(private readonly o: Options) {
    this.sessions = new SessionTable(o.max_sessions)
  }

  score(view: EndpointView, tokens: number, request?: PickRequest, pool?: PoolLoad): number {
    const load = leastWaitScorer.score(view, tokens)
    if (!Number.isFinite(load)) return Number.POSITIVE_INFINITY
    const affinity = this.saturated(view, tokens, pool) ? 0 : this.affinity(view, request).share
    return this.o.load_weight * load + this.o.prefix_weight * (1 - affinity)
  }

  /**
   * True when the endpoint is past `saturation` with this request (KV after it, or batch
   * slots), or holds more than `max_load_ratio` times its share of the candidates' requests
   * in flight, this one counted (bounded load, as consistent hashing with bounded loads:
   * ceil(ratio × (in flight + 1) / candidates)), and never under ceil(ratio): near idle, a
   * share of the pool's one or two requests is under one, and a replica serving one turn of
   * a conversation would lose the next to an idle one.
   */
  saturated(view: EndpointView, tokens: number, pool?: PoolLoad): boolean {
    return this.saturatedBy(view, tokens, pool) !== undefined
  }

  /** Which saturation test the endpoint fails (the first), or undefined. */
  saturatedBy(view: EndpointView, tokens: number, pool?: PoolLoad): Override | undefined {
    const e = view.effective
    if (pool !== undefined && pool.endpoints > 1) {
      const ratio = this.o.max_load_ratio
      const bound = Math.max(
        Math.ceil(ratio),
        Math.ceil((ratio * (pool.inflightRequests + 1)) / pool.endpoints),
      )
      if (e.inflightRequests + 1 > bound) return 'load_ratio'
    }
    const slots = view.capacity.maxNumSeqs ?? DEFAULT_BATCH_SLOTS
    if (Math.max(e.inflightRequests, e.running) / slots >= this.o.saturation) return 'slots'
    if (e.kvUsage === undefined) return undefined
    const cap = e.kvCapacityTokens
    const k = cap !== undefined && cap > 0 ? e.kvUsage + Math.max(0, tokens) / cap : e.kvUsage
    return k >= this.o.saturation ? 'kv' : undefined
  }

  /** The share of the prompt the endpoint holds (0..1), saturation aside; `session`: by its session. */
  affinity(view: EndpointView, request: PickRequest | undefined): { share: number; session: boolean } {
    if (request === undefined) return { share: 0, session: false }
    if (
      this.o.session_affinity &&
      request.session !== undefined &&
      this.sessions.endpointOf(request.session) === view.name
    )
      return { share: 1, session: true }
    const blocks = request.blocks
    const tokens = request.promptTokens ?? 0
    if (blocks === undefined || tokens <= 0 || view.prefixCache === undefined)
      return { share: 0, session: false }
    const cached = view.prefixCache.expectedHit(blocks, tokens).cached
    return { share: Math.min(1, Math.max(0, cached / tokens)), session: false }
  }

  picked(
    chosen: EndpointView,
    candidates: readonly EndpointView[],
    excluded: readonly EndpointView[],
    tokens: number,
    request: PickRequest | undefined,
  ): void {
    this.decisions[this.decide(chosen, candidates, excluded, tokens, request)]++
    if (this.o.session_affinity && request?.session !== undefined)
      this.sessions.sent(request.session, chosen.name)
  }

  private decide(
    chosen: EndpointView,
    candidates: readonly EndpointView[],
    excluded: readonly EndpointView[],
    tokens: number,
    request: PickRequest | undefined,
  ): Decision {
    if (request === undefined) return 'none'
    const pool = poolLoad(candidates)
    let best = 0
    let why: Override | undefined // why the best was off (undefined: one of the best was open)
    for (const [views, blocked] of [
      [candidates, false],
      [excluded, true],
    ] as const) {
      for (const v of views) {
        const share = this.affinity(v, request).share
        const off = blocked ? 'gate' : this.saturatedBy(v, tokens, pool)
        if (share > best + EPS) {
          best = share
          why = off
        } else if (share >= best - EPS && share > 0 && off === undefined) why = undefined
      }
    }
    if (best <= 0) return 'none'
    const own = this.saturated(chosen, tokens, pool)
      ? { share: 0, session: false }
      : this.affinity(chosen, request)
    if (own.share >= best - EPS) return own.session ? 'session' : 'affinity'
    if (why === undefined) return 'load'
    this.overrides[why]++
    return 'saturated'
  }

  state(): object {
    return {
      weights: { prefix: this.o.prefix_weight, load: this.o.load_weight },
      saturation: this.o.saturation,
      maxLoadRatio: this.o.max_load_ratio,
      sessionAffinity: this.o.session_affinity,
      sessions: this.sessions.size,
      decisions: { ...this.decisions },
      saturatedBy: { ...this.overrides },
    }
  }
}
