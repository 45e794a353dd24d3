/**
 * Holding a request for the endpoint that caches its prompt (prefix-aware routing only).
 *
 * Admission dispatches a request to an endpoint its gates leave open (prefill budget, decode
 * guard, headroom). Near capacity those gates close and reopen every few engine steps, and
 * the endpoint holding a conversation's history is often closed for a moment just when its
 * next turn arrives. Sent to an open endpoint instead, the turn's whole history is prefilled
 * again there: hundreds of milliseconds of engine time for a long conversation, taken from
 * every stream that endpoint serves (a longer step for all of them), and the history is then
 * cached twice. So a request waits for the endpoint the picker would choose with every gate
 * open (its prefix affinity, the saturation override and the load as routing weighs them)
 * when that endpoint is expected to open sooner than the open ones would take to compute
 * what it holds and they do not:
 *
 *   hold = reopen(home)   when   held so far + reopen(home) < (cached(home) − max cached(open)) × ms per prompt token
 *
 * (a request held before counts its hold so far: holds in a row never cost more than the
 * recompute they avoid), and past capacity (requests of its class wait behind it, or every
 * open endpoint has a prefill under way), where engine time is what is short and the
 * recompute would be taken from every stream there, also
 *
 *   hold = reopen(home)   when   reopen(home) < its slack (the time left until the latest
 *                                dispatch that still meets its TTFT objective)
 *
 * so past capacity a request goes elsewhere only when its home cannot serve it in time.
 * And then, past capacity, when elsewhere it would compute more than twice what it computes
 * at home (what the home holds beyond the best open endpoint is more than what the home
 * would compute), it is refused instead (`ttft_slo`, Retry-After: when its home reopens):
 * the recompute would take the engine time of more requests than this one, from a pool
 * that is already refusing some (recomputeRefusalMs). Measured on bench:prefix,
 * multi-turn-think at 2x with clients that retry: goodput 31.5 good req/s against 29.0
 * without it, +26% over least-wait (bench/results/prefix-routing.md, -retries.md).
 * (Measured on bench:prefix, multi-turn-think at 2x: requiring reopen + recompute < slack
 * instead, as this rule did first, 1,469 picks left a closed home in a run; with this rule
 * 932, and the engines' hit rate rose from 74.7% to 77.3%: bench/results/prefix-routing.md.)
 * Else it goes now, where it can. A held request waits in its class's queue, at its head,
 * as any request the gates hold; it is dispatched when the home opens (the dispatcher runs
 * when a gate may have opened) or, at the latest, when the hold is over and it is weighed
 * again. A home the picker overrides (saturated, over its share of the load) is no home:
 * the request is not held for it.
 *
 * Out of turn. Past capacity every endpoint opens and closes in turn, and a queue's head is
 * rarely at the door of its own home when that one opens: sent where it can go, it is
 * recomputed there, and so is the next conversation's turn, until the pool computes most
 * histories again and its capacity falls just when it is needed. So when the head's home is
 * closed, the dispatcher first looks among the few requests behind it in its class (two per
 * endpoint, oldest first) for one whose own home is open, and sends that one there; the
 * head waits for its home (or its hold, or goes where it can) as before. A head is passed
 * over at most as many times as the pool has endpoints, and the request taken out of turn
 * is charged to its tenant's round-robin turn, so the order bends by a few places and
 * fairness between tenants holds.
 */
import type { EndpointView } from '../backends/types.js'

export interface HoldInputs {
  /** Every usable endpoint (the gates aside). */
  readonly views: readonly EndpointView[]
  /** The gates: true when the endpoint may take the request now. */
  readonly open: (v: EndpointView) => boolean
  /** Where the picker would send it were every endpoint open (undefined: no prefix routing). */
  readonly home: EndpointView | undefined
  /** Prompt tokens `v` is expected to serve from its cache. */
  readonly cachedAt: (v: EndpointView) => number
  /** When `v` is expected to open for the request, ms from now. */
  readonly reopenInMs: (v: EndpointView) => number
  /** The server's cost of one more prompt token to compute, ms. */
  readonly msPerToken: number
  /** How long the request has been held already, ms (0: never). */
  readonly heldMs: number
  /**
   * Past capacity: requests of its class wait behind it, or every open endpoint already has
   * a prefill under way (engine time is what is short, not endpoints). Default false.
   */
  readonly busy?: boolean
  /** Ms left until the latest dispatch that still meets its TTFT objective at home (default: none). */
  readonly slackMs?: number
}

/** The home closed to a request, what it holds, and the most an open endpoint holds (-1: none open). */
export interface HomeCache {
  readonly home: EndpointView
  readonly homeCached: number
  readonly openCached: number
}

/** The request's home when it is closed to it and holds some of its prompt; else undefined. */
export function homeCache(h: HoldInputs): HomeCache | undefined {
  const home = h.home
  if (home === undefined || !(h.msPerToken > 0)) return undefined
  if (h.open(home)) return undefined
  const homeCached = h.cachedAt(home)
  if (homeCached <= 0) return undefined
  let openCached = -1
  for (const v of h.views) if (v !== home && h.open(v)) openCached = Math.max(openCached, h.cachedAt(v))
  return { home, homeCached, openCached }
}

/**
 * How long to hold the request for its home endpoint, ms; 0: dispatch it now where it can go.
 * `c`: homeCache(h), when the caller has it already.
 */
export function cacheHoldMs(h: HoldInputs, c = homeCache(h)): number {
  if (c === undefined) return 0
  const { home, homeCached, openCached } = c
  if (openCached < 0) return 0 // nothing is open: it waits anyway
  const savedMs = (homeCached - openCached) * h.msPerToken
  if (savedMs <= 0) return 0
  const wait = h.reopenInMs(home)
  if (!(wait > 0)) return 0
  if (h.heldMs + wait < savedMs) return wait
  // busy: the recompute is engine time taken from everyone; waiting costs only this request's
  // slack, so it waits while its home can still serve it in time
  return h.busy === true && wait < (h.slackMs ?? 0) ? wait : 0
}

/**
 * Past capacity, for a request not held (cacheHoldMs 0) whose home cannot serve it within
 * its slack: when the best open endpoint would compute more than twice what its home would
 * (of its `promptTokens`), the ms until its home reopens (the request is refused, told to
 * come back then); else undefined (it goes where it can).
 */
export function recomputeRefusalMs(
  h: HoldInputs,
  promptTokens: number,
  c = homeCache(h),
): number | undefined {
  if (h.busy !== true) return undefined
  if (c === undefined || c.openCached < 0) return undefined
  const extra = c.homeCached - c.openCached
  if (!(extra > promptTokens - c.homeCached)) return undefined
  const wait = h.reopenInMs(c.home)
  if (!(wait >= (h.slackMs ?? 0)) || !Number.isFinite(wait)) return undefined
  return wait
}
