/**
 * Decode guard: a class may dispatch to an endpoint only while the streams that endpoint
 * serves decode within the TPOT objective of that class and of every class above it
 * (SLO x (1 - margin)). Each class's TPOT margin is learned like its TTFT margin
 * (margin.ts): the configured margin at least, widened while more of its admitted streams
 * decode above their TPOT objective than `tpot_miss_target` (each judged once: on its first
 * gaps when they already miss, else at its end; waiting.ts). The guard holds the live ITL
 * near its limit, and a stream's TPOT is the mean of its own steps, which spread around it
 * (a long prompt's prefill chunks lengthen a few of them): with a fixed margin of 10%, in a
 * bench:admission run under a batch flood a fifth of the admitted streams missed their TPOT.
 *
 * Every sequence in an engine's running batch gets one token per step, and a step is
 * longer for every sequence in the batch, every cached token it attends to and every prompt
 * token prefilled in it. So the inter-token latency (ITL) the gateway sees on the streams
 * it relays from an endpoint is that endpoint's step time now: what a request dispatched
 * there will decode at. It is measured live, as the mean gap between consecutive content
 * chunks of all the endpoint's streams, each gap's weight decaying with a time constant
 * `tauMs` (a few engine steps), from every class (all share the steps), so it does not go
 * stale while one class is refused. An endpoint with no gap for two time constants is not
 * held back.
 *
 * A step's end reaches the gateway as a burst of tokens, one stream's after another, over
 * milliseconds when the gateway is busy, and the dispatcher runs after the first of them
 * (a new step began): the mean then holds one gap of the step that just ended and lacks
 * the rest. So the gaps not read yet count as owed, one of that step's length for each
 * stream that was decoding when it ended (EngineTimeline.unreadGaps), for as long as the
 * burst is read. Without them the gate's decision hung on how fast the gateway read: in
 * bench:admission's prefix-sharing runs half of the queued interactive requests went out
 * with 1% of a step's tokens read, after long prefill steps too, where on the 70B profile
 * (fewer streams) it saw the whole burst; and the forecast of a queued request's wait,
 * which plays every step end whole (dispatch-forecast.ts), was over by as much as 168 ms at p90.
 *
 * The guard closes while ITL is over the objective: no new prefill goes to the endpoint,
 * its steps shrink back to decode, and the queue forms in the gateway (where a request's
 * predicted TTFT sees it) instead of in the running batch. It opens at the gap that brings
 * the mean back within the limit. A decaying mean, not the mean of fixed windows: a
 * stream's TPOT is the mean of all its steps, and one long prefill step among short decode
 * steps barely moves it. Over fixed windows of 200 ms, one ~270 ms step put a window over a
 * 45 ms limit and held the guard closed for the whole next window, ~200-400 ms of decode at
 * ~14 ms a step, while the streams there ended at a TPOT of ~14 ms (the a100 profile at
 * 0.5x in bench:admission): requests arriving then were predicted to wait out the window and
 * refused. The decaying mean weighs the long step against the short ones before it and opens
 * after a few short ones.
 *
 * A limit the engine cannot reach is let go: where one or two sequences already decode at or
 * over it (the endpoint's least step, engine-facts.ts), holding new streams cannot bring the
 * ITL under it, and the guard would only serialise the endpoint: before this, a server that
 * gives 100 ms a token at any batch size had its streams held one after another, and most
 * requests were refused after a predicted wait for an opening that never came. Admission
 * warns of such an objective (tpot-reachable.ts); prediction and headroom still bound what
 * is sent there, and a tighter limit of a class above still binds.
 *
 * A class below keeps headroom under the objectives above it while a class above is active
 * (`headroomBelow`, admission.decode_headroom_below): it gets a TPOT objective of its own,
 * the tightest above x (1 - headroomBelow), with a margin learned from its own streams like
 * any class's. Sharing one limit, a batch flood that is already running holds the steps at
 * the very ITL that closes interactive's guard, so interactive waits in the gateway behind
 * work it outranks, and its long prompts, predicted at those steps, are refused. A fixed
 * headroom is not enough: the guard reads the ITL a step late, and the flood's prefill
 * overshoots it (on the 70B profile in bench:admission, batch at 0.7 of interactive's limit
 * still ran steps of ~33 ms at 2x); the learned margin corrects the overshoot, as it does
 * for interactive's own streams.
 */
import type { Clock } from '../clock.js'
import { MissMargin } from './margin.js'

export interface GuardedClass {
  readonly name: string
  readonly priority: number
  readonly tpotMs: number | undefined
}

/** A TPOT objective the guard holds a class to, and its learned margin. */
interface Objective {
  readonly tpotMs: number
  readonly margin: MissMargin
}

const limitOf = (o: Objective) => o.tpotMs * (1 - o.margin.value)

/** `o`'s limit, or none (infinite) when the endpoint's least step is at or over it: no batch size gets under it. */
const reachableLimit = (o: Objective, leastStepMs: number) => {
  const l = limitOf(o)
  return l > leastStepMs ? l : Number.POSITIVE_INFINITY
}

/** Teaches `o`'s margin a stream's TPOT: always a final one, a partial one only when it already misses. */
function judge(o: Objective, tpotMs: number, final: boolean): boolean {
  const missed = tpotMs > o.tpotMs
  if (!missed && !final) return false
  o.margin.observe(missed)
  return true
}

/** One closed window of an endpoint's inter-chunk gaps. */
export interface ItlWindow {
  readonly meanMs: number
  /** Gaps it averaged. */
  readonly gaps: number
  /** About how many streams decoded through it: its gaps' sum over its length. */
  readonly streams: number
}

/** Where an endpoint's decaying ITL mean is now, for a forecast of when the guard opens (dispatch-forecast.ts). */
export interface GuardWindow {
  /** The mean's time constant, ms: a gap's weight falls by e in that time. */
  readonly tauMs: number
  /** The decayed sums as of now: of the gaps (ms) and of their weights (the mean is their ratio). */
  readonly sumMs: number
  readonly gaps: number
  /** The ITL under which the class may dispatch. */
  readonly limitMs: number
  /** The class may dispatch now. */
  readonly open: boolean
}

/** The next step at an endpoint, with the prompts pending there: its length by the step model, and the streams it holds up. */
export interface NextStep {
  readonly stepMs: number
  readonly streams: number
}

/** The decayed sums of a run of gaps (ms) and of their weights: the mean is their ratio. */
export interface DecayedGaps {
  sumMs: number
  gaps: number
}

/** The mean of decayed sums `sumMs` / `gaps` with `count` more gaps of `gapMs` each. */
export function meanWith(sumMs: number, gaps: number, gapMs: number, count: number): number {
  return (sumMs + gapMs * count) / (gaps + count)
}

/** The longest gap of which `count` more keep the mean of `sumMs` / `gaps` within `limitMs` (meanWith's inverse). */
export function longestGapWithin(sumMs: number, gaps: number, count: number, limitMs: number): number {
  return (limitMs * (gaps + count) - sumMs) / count
}

/**
 * Adds `count` gaps of `gapMs` each to `d`, the weights there first decayed over `sinceMs` at
 * time constant `tauMs`: the guard's mean as the meter keeps it and as the forecast plays it.
 */
export function addGaps(d: DecayedGaps, sinceMs: number, tauMs: number, gapMs: number, count: number): void {
  if (sinceMs > 0) {
    const decay = Math.exp(-sinceMs / tauMs)
    d.sumMs *= decay
    d.gaps *= decay
  }
  d.sumMs += gapMs * count
  d.gaps += count
}

/**
 * One endpoint's inter-chunk gaps: their mean, each gap's weight decaying with time
 * constant `tauMs` (the guard's measure), and fixed windows of that length (engine facts
 * read each closed window's mean as the endpoint's step time).
 */
class ItlMeter {
  /** The decayed sums of the gaps and of their weights, as of `at` (the last gap). */
  readonly decayed: DecayedGaps = { sumMs: 0, gaps: 0 }
  at: number
  /** The window now open. */
  sum = 0
  n = 0
  start: number
  /** The length of the window `record` last closed, ms. */
  private closedMs = 0

  constructor(now: number) {
    this.at = now
    this.start = now
  }

  /** The decaying mean, ms (a mean of weights that decay alike does not change between gaps). */
  get mean(): number {
    return this.decayed.sumMs / this.decayed.gaps
  }

  /** The mean at `now`; undefined before a gap, or with none for two time constants. */
  meanAt(now: number, tauMs: number): number | undefined {
    return this.decayed.gaps > 0 && now - this.at <= 2 * tauMs ? this.mean : undefined
  }

  /** The factor the weights have decayed by from the last gap to `now`. */
  decayTo(now: number, tauMs: number): number {
    return Math.exp((this.at - now) / tauMs)
  }

  /** Adds one gap; true when it closed a window of `tauMs`. */
  record(gapMs: number, now: number, tauMs: number): boolean {
    addGaps(this.decayed, now - this.at, tauMs, gapMs, 1)
    this.at = now
    this.sum += gapMs
    this.n++
    if (now - this.start < tauMs) return false
    this.closedMs = now - this.start
    this.start = now
    return true
  }

  /** Closes the window now open: its mean, gaps and streams. */
  closeWindow(): ItlWindow {
    const w = { meanMs: this.sum / this.n, gaps: this.n, streams: this.sum / this.closedMs }
    this.sum = 0
    this.n = 0
    return w
  }
}

export class DecodeGuard {
  private readonly clock: Clock
  private readonly tauMs: number
  private readonly meters = new Map<string, ItlMeter>()
  /** Classes with a TPOT objective: the objective and its margin. */
  private readonly objectives = new Map<string, Objective>()
  /** For each class: the classes at or above it with a TPOT objective (the tightest binds). */
  private readonly bindingFor = new Map<string, readonly string[]>()
  /** For each class below one with a TPOT objective (headroomBelow > 0): its objective while one above is active. */
  private readonly belowObjectives = new Map<string, Objective & { readonly above: readonly string[] }>()
  /** Called when the guard may have opened (a gap brought the mean within a limit, or a window closed). */
  onChange: (() => void) | undefined = undefined
  /** True while `className` has had an arrival lately (its classes below then keep the headroom). */
  active: (className: string) => boolean = () => true
  /** The gaps a step that just ended at `endpoint` owes streams whose tokens are not read yet (EngineTimeline.unreadGaps). */
  unread: (endpoint: string, now: number) => { gapMs: number; count: number } | undefined = () => undefined

  constructor(
    classes: readonly GuardedClass[],
    margin: number,
    tauMs: number,
    clock: Clock,
    missTarget = 0,
    headroomBelow = 0,
  ) {
    if (!(headroomBelow >= 0 && headroomBelow < 1))
      throw new RangeError(`headroomBelow must be in [0, 1), got ${headroomBelow}`)
    this.clock = clock
    this.tauMs = tauMs
    for (const c of classes) {
      if (c.tpotMs !== undefined)
        this.objectives.set(c.name, { tpotMs: c.tpotMs, margin: new MissMargin(margin, missTarget) })
    }
    for (const c of classes) {
      const atOrAbove = classes.filter((o) => o.priority <= c.priority && o.tpotMs !== undefined)
      this.bindingFor.set(
        c.name,
        atOrAbove.map((o) => o.name),
      )
      const above = atOrAbove.filter((o) => o.priority < c.priority)
      if (headroomBelow > 0 && above.length > 0)
        this.belowObjectives.set(c.name, {
          tpotMs: Math.min(...above.map((o) => o.tpotMs as number)) * (1 - headroomBelow),
          margin: new MissMargin(margin, missTarget),
          above: above.map((o) => o.name),
        })
    }
  }

  /** The objective `className` keeps below the classes above it now: undefined while none of them is active. */
  private below(className: string): Objective | undefined {
    const b = this.belowObjectives.get(className)
    if (b === undefined) return undefined
    for (const name of b.above) if (this.active(name)) return b
    return undefined
  }

  /**
   * The ITL under which `className` may add to a batch: the tightest TPOT x (1 - margin) at or
   * above it, and its objective below them while one of them is active; of those, only the
   * ones above `leastStepMs` (the endpoint's least step, when measured: see the header).
   */
  limitMs(className: string, leastStepMs = 0): number {
    let limit = Number.POSITIVE_INFINITY
    for (const name of this.bindingFor.get(className) ?? []) {
      const o = this.objectives.get(name)
      if (o !== undefined) limit = Math.min(limit, reachableLimit(o, leastStepMs))
    }
    const b = this.below(className)
    return b === undefined ? limit : Math.min(limit, reachableLimit(b, leastStepMs))
  }

  /**
   * An admitted stream of `className` decoded at `tpotMs` per token: in all (`final`), or so
   * far. A final figure always teaches the class's margins (its own objective's, and its
   * objective below the classes above while one of them is active); one so far only when
   * it already misses (a stream on track may still slow). True when it taught (the stream is judged).
   */
  judgeTpot(className: string, tpotMs: number, final: boolean): boolean {
    const own = this.objectives.get(className)
    const below = this.below(className)
    if (own === undefined && below === undefined) return final
    const judgedOwn = own !== undefined && judge(own, tpotMs, final)
    const judgedBelow = below !== undefined && judge(below, tpotMs, final)
    return judgedOwn || judgedBelow
  }

  /** The TPOT margin of `className` now; undefined for a class with no TPOT objective. */
  margin(className: string): number | undefined {
    return this.objectives.get(className)?.margin.value
  }

  /**
   * Each class's TPOT margin now (classes with a TPOT objective), and the margin of each
   * class's objective below the classes above it (`<class>:below`).
   */
  margins(): Record<string, number> {
    const round = (o: Objective) => Math.round(o.margin.value * 1000) / 1000
    return Object.fromEntries([
      ...[...this.objectives].map(([k, o]) => [k, round(o)]),
      ...[...this.belowObjectives].map(([k, o]) => [`${k}:below`, round(o)]),
    ])
  }

  /**
   * Records one inter-chunk gap of a stream from `endpoint`; returns the window when this
   * closed one (engine facts). Signals `onChange` when the guard may have opened: at a
   * window's close, and when the gap brought the mean down to a class's limit.
   */
  observe(endpoint: string, gapMs: number, now: number): ItlWindow | undefined {
    let m = this.meters.get(endpoint)
    if (m === undefined) {
      m = new ItlMeter(now)
      this.meters.set(endpoint, m)
    }
    // unmeasured or stale, the guard was open: no gap opens it
    const before = m.meanAt(now, this.tauMs) ?? Number.NEGATIVE_INFINITY
    const closed = m.record(gapMs, now, this.tauMs)
    if (closed || (m.mean < before && this.crossed(m.mean, before))) this.onChange?.()
    return closed ? m.closeWindow() : undefined
  }

  /** True when some class's limit lies in [`to`, `from`): a fall of the mean from `from` to `to` opened it. */
  private crossed(to: number, from: number): boolean {
    for (const name of this.bindingFor.keys()) {
      const limit = this.limitMs(name)
      if (to <= limit && limit < from) return true
    }
    return false
  }

  /**
   * `m`'s decayed sums at `now` and their mean, with the gaps owed at `endpoint` (not read
   * yet) counted in: one lookup of them per check.
   */
  private owed(m: ItlMeter, endpoint: string, now: number): DecayedGaps & { mean: number } {
    const decay = m.decayTo(now, this.tauMs)
    const d = { sumMs: m.decayed.sumMs * decay, gaps: m.decayed.gaps * decay, mean: m.mean }
    const u = this.unread(endpoint, now)
    if (u !== undefined) {
      addGaps(d, 0, this.tauMs, u.gapMs, u.count)
      d.mean = d.sumMs / d.gaps
    }
    return d
  }

  /** The endpoint's current ITL (its decaying mean), ms; undefined when it had no gap in two time constants. */
  itl(endpoint: string): number | undefined {
    return this.meters.get(endpoint)?.meanAt(this.clock.now(), this.tauMs)
  }

  /**
   * When `endpoint` may open again for `className`, ms from now (0: open). An estimate: the
   * gaps so far lose weight by e per time constant from the last one; with the next gaps far
   * shorter than the limit, the mean reaches it tau x ln(mean / limit) after the last gap
   * (and with no gap at all, the endpoint is not held two time constants after it).
   */
  reopenInMs(endpoint: string, className: string, leastStepMs?: number): number {
    const m = this.meters.get(endpoint)
    const now = this.clock.now()
    const limit = this.limitMs(className, leastStepMs)
    if (m === undefined || m.meanAt(now, this.tauMs) === undefined) return 0
    const itl = this.owed(m, endpoint, now).mean
    if (itl <= limit) return 0
    const afterLastGap = this.tauMs * Math.min(2, Math.log(itl / limit))
    return Math.max(0, m.at + afterLastGap - now)
  }

  /** The guard of `endpoint` for `className` as a forecast needs it (undefined: never measured there). */
  window(className: string, endpoint: string, leastStepMs?: number): GuardWindow | undefined {
    const m = this.meters.get(endpoint)
    if (m === undefined) return undefined
    const d = this.owed(m, endpoint, this.clock.now())
    return {
      tauMs: this.tauMs,
      sumMs: d.sumMs,
      gaps: d.gaps,
      limitMs: this.limitMs(className, leastStepMs),
      open: this.allows(className, endpoint, leastStepMs),
    }
  }

  /**
   * True when `className` may add a request to `endpoint`'s running batch now (`leastStepMs`:
   * the endpoint's, when measured): its ITL mean is within the class's limit, and stays
   * within it with `nextAt(endpoint)`, the step the prompts already sent there will be prefilled in,
   * counted in as a gap of each stream decoding there. The mean shows a step only once it
   * has ended (and, while a step end's burst is read, holds the gaps not read yet as owed:
   * see the header): without `next`, a burst of cheap prompts (a prefix-cache hit each) all passed
   * the guard within one step and made the next steps long for every stream (bench:admission,
   * prefix-sharing at 2x: the ITL at 63-84 ms as the load doubled, the TPOT margin then at
   * its cap and arrivals refused for seconds). The request's own prompt is not counted: a
   * long prompt alone would otherwise wait on a young or slow meter for the streams to end.
   */
  allows(
    className: string,
    endpoint: string,
    leastStepMs?: number,
    nextAt?: (endpoint: string) => NextStep | undefined,
  ): boolean {
    const limit = this.limitMs(className, leastStepMs)
    if (limit === Number.POSITIVE_INFINITY) return true
    const m = this.meters.get(endpoint)
    const now = this.clock.now()
    if (m === undefined || m.meanAt(now, this.tauMs) === undefined) return true
    const d = this.owed(m, endpoint, now)
    if (d.mean > limit) return false
    // read only when the guard is open without it (it walks the prompts pending there)
    const next = nextAt?.(endpoint)
    if (next === undefined || next.streams <= 0) return true
    return meanWith(d.sumMs, d.gaps, next.stepMs, next.streams) <= limit
  }

  state(): Record<string, number | null> {
    return Object.fromEntries(
      [...this.meters.keys()].map((e) => {
        const v = this.itl(e)
        return [e, v === undefined ? null : Math.round(v * 100) / 100]
      }),
    )
  }
}
