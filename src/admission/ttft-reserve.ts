/**
 * The TTFT reserve: a class below may dispatch to an endpoint only while a request of a class
 * above, arriving just after it, would still meet its TTFT objective there.
 *
 * A model server prefills first come, first served, and every sequence it runs lengthens
 * its steps. So what a batch request sent now costs an interactive request sent a moment
 * later is the batch prompt's prefill ahead of it and, for as long as the batch request
 * runs, a longer step for every prefill chunk. The prefill share and the decode guard bound
 * each part alone (and the decode guard only by the TPOT objective, which lets steps grow
 * far past what a long interactive prompt's TTFT can take on a slow engine): on a 70B
 * profile, the batch flood they let in made the steps twice as long as with two batch
 * requests at a time, and the long interactive prompts were refused on their predicted TTFT,
 * so a tuned concurrency cap served more interactive requests than the gateway did.
 *
 * The reserve asks the estimator directly: with this request's prompt added to what is
 * pending at the endpoint, at its live step time, is the predicted server TTFT of a
 * `quantile`-sized prompt of the class above (of its recent arrivals, the prompt tokens
 * its servers would compute) within that class's admission budget (objective × (1 −
 * margin))? (Default 0.99: on the 70B profile 0.9 bound in some runs and not in others; see
 * the README.) Held back, the lower class waits in the gateway's queue, the requests it runs
 * end, the steps shrink, and it goes again. Only while the class above has had an arrival
 * in the last `idleMs`: a pool that serves batch alone gives it everything. A class served
 * under its floor (min_share) passes, as it passes the decode guard, and an idle endpoint
 * takes any request. Unlike the other gates it is not work-conserving: it keeps room free
 * for arrivals that have not come yet (`admission.ttft_reserve_quantile` 0 turns it off).
 *
 * It also says which classes are active (an arrival within `idleMs`, whatever the
 * quantile): the decode guard keeps its headroom below a class only while it is.
 */

import type { EndpointView } from '../backends/types.js'

/** Arrivals remembered per class, for the quantile of their prompt sizes. */
const RING = 256
/** The quantile is recomputed after this many arrivals (a sort of RING numbers). */
const REFRESH_EVERY = 16

/** One class's recent prompt sizes and when it last had an arrival. */
class Arrivals {
  private readonly ring = new Float64Array(RING)
  private n = 0
  private next = 0
  private sinceRefresh = 0
  private cached = 0
  lastAt = Number.NEGATIVE_INFINITY

  /** `quantile` 0: only when the class last had an arrival is kept. */
  constructor(readonly quantile: number) {}

  add(tokens: number, now: number): void {
    this.lastAt = now
    if (this.quantile === 0) return
    this.ring[this.next] = tokens
    this.next = (this.next + 1) % RING
    if (this.n < RING) this.n++
    // the first arrivals refresh it at once: a reserve from one prompt is better than none
    if (++this.sinceRefresh >= REFRESH_EVERY || this.n <= REFRESH_EVERY) this.refresh()
  }

  /** The quantile of the prompt sizes remembered, tokens. */
  get tokens(): number {
    return this.cached
  }

  private refresh(): void {
    this.sinceRefresh = 0
    const sorted = this.ring.slice(0, this.n).sort()
    this.cached = sorted[Math.min(this.n - 1, Math.floor(this.quantile * this.n))] ?? 0
  }
}

export interface ReserveClass {
  readonly name: string
  readonly priority: number
  /** Whether the class is refused on its predicted TTFT with an objective: it may hold a reserve. */
  readonly reserves: boolean
}

/** What a class above needs kept free: room for a prompt of `tokens` to compute within its TTFT budget. */
export interface Reserve {
  readonly className: string
  readonly tokens: number
}

export class TtftReserve {
  private readonly arrivals = new Map<string, Arrivals>()
  /** Per class, the classes above it that hold a reserve, tightest priority first. */
  private readonly above = new Map<string, readonly string[]>()

  /** `quantile` 0: no class holds a reserve (arrivals are still tracked, for `active`). */
  constructor(
    classes: readonly ReserveClass[],
    quantile: number,
    private readonly idleMs: number,
  ) {
    if (!(quantile >= 0 && quantile <= 1)) throw new RangeError(`quantile must be in [0, 1], got ${quantile}`)
    for (const c of classes) this.arrivals.set(c.name, new Arrivals(c.reserves ? quantile : 0))
    for (const c of classes) {
      const names = classes
        .filter((o) => quantile > 0 && o.reserves && o.priority < c.priority)
        .sort((a, b) => a.priority - b.priority)
        .map((o) => o.name)
      this.above.set(c.name, names)
    }
  }

  /** A request of `className` arrived needing `computeTokens` of prefill (its least, over the endpoints). */
  arrived(className: string, computeTokens: number, now: number): void {
    this.arrivals.get(className)?.add(computeTokens, now)
  }

  /** The reserves a request of `className` must keep at `now`: none when no class above has had an arrival lately. */
  of(className: string, now: number): Reserve[] {
    const names = this.above.get(className)
    if (names === undefined || names.length === 0) return NONE
    let out: Reserve[] | undefined
    for (const name of names) {
      const a = this.arrivals.get(name)!
      if (now - a.lastAt > this.idleMs) continue
      out ??= []
      out.push({ className: name, tokens: a.tokens })
    }
    return out ?? NONE
  }

  /** True while `className` has had an arrival within the idle time. */
  active(className: string, now: number): boolean {
    const a = this.arrivals.get(className)
    return a !== undefined && now - a.lastAt <= this.idleMs
  }

  state(): Record<string, number> {
    return Object.fromEntries(
      [...this.arrivals].flatMap(([k, a]) => (a.quantile > 0 ? [[k, Math.round(a.tokens)]] : [])),
    )
  }
}

const NONE: Reserve[] = []

/** What a prompt sent to an endpoint now meets there. */
export interface ServerAt {
  /** The endpoint's live step time, ms (undefined: not measured). */
  readonly stepMs: number | undefined
  /** The time left in the step in progress, ms. */
  readonly residualMs: number
  /** The prompt tokens pending beyond those the step in progress took. */
  readonly pendingTokens: number
}

/** What the reserve's check reads of the pool. */
export interface ReserveCheck {
  /** What a prompt sent to `endpoint` now meets there. */
  serverAt(endpoint: string): ServerAt
  /** Predicted server TTFT of a prompt of `own` tokens behind `ahead` pending, at `at`'s step. */
  serverMs(at: ServerAt, ahead: number, own: number): number
  /** The TTFT budget of `className` (objective x (1 - margin)). */
  budget(className: string): number
  /** True while a class below `className` has requests in flight in the pool. */
  belowRunning(className: string): boolean
}

/**
 * True when, with `tokens` more prompt sent to `v`, each reserve's prompt arriving next
 * is still predicted within its class's TTFT budget there. Holding back helps only what
 * the classes below cause: when the reserve is missed without this request too and no
 * request of a class below runs in the pool, the excess is the class above's own load
 * (or a slow server), and the request goes. An idle endpoint takes the request whatever
 * its size (as for headroom: a prompt larger than the reserve allows would otherwise never
 * go), so the reserve delays a class below but never stalls it.
 */
export function keepsReserves(
  v: EndpointView,
  reserves: readonly Reserve[],
  tokens: number,
  check: ReserveCheck,
): boolean {
  if (v.effective.inflightRequests === 0 && v.effective.waiting === 0) return true
  const at = check.serverAt(v.name)
  for (const r of reserves) {
    const budget = check.budget(r.className)
    if (check.serverMs(at, at.pendingTokens + tokens, r.tokens) <= budget) continue
    if (check.serverMs(at, at.pendingTokens, r.tokens) > budget && !check.belowRunning(r.className)) continue
    return false
  }
  return true
}
