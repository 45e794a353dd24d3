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
 * chunks of all the endpoint's streams over windows of `windowMs` (a few engine steps),
 * from every class (all share the steps), so it does not go stale while one class is
 * refused. An endpoint with no streamed measurement for two windows is not held back.
 *
 * The guard closes while ITL is over the objective: no new prefill goes to the endpoint,
 * its steps shrink back to decode, and the queue forms in the gateway (where a request's
 * predicted TTFT sees it) instead of in the running batch.
 *
 * A class below keeps headroom under the objectives above it while a class above is active
 * (`headroomBelow`, admission.decode_headroom_below): it gets a TPOT objective of its own,
 * the tightest above x (1 - headroomBelow), with a margin learned from its own streams like
 * any class's. Sharing one limit, a batch flood that is already running holds the steps at
 * the very ITL that closes interactive's guard, so interactive waits in the gateway behind
 * work it outranks, and its long prompts, predicted at those steps, are refused. A fixed
 * headroom is not enough: the guard reads the ITL a window late, and the flood's prefill
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
}

/** Where an endpoint's ITL window is now, for a forecast of when the guard opens (dispatch-forecast.ts). */
export interface GuardWindow {
  /** The window's length, ms. */
  readonly windowMs: number
  /** Its age now, ms. */
  readonly ageMs: number
  /** The gaps it has so far: their sum (ms) and count. */
  readonly sumMs: number
  readonly gaps: number
  /** The ITL under which the class may dispatch. */
  readonly limitMs: number
  /** The class may dispatch now. */
  readonly open: boolean
}

/** Mean inter-chunk gap of one endpoint's streams, per window. */
class ItlMeter {
  sum = 0
  n = 0
  start: number
  /** The last closed window's mean gap, ms. */
  value: number | undefined = undefined
  /** The gaps the last closed window averaged. */
  gaps = 0
  closedAt = Number.NEGATIVE_INFINITY

  constructor(now: number) {
    this.start = now
  }

  /** When the window now open can close: at its first gap once it has lasted `windowMs`, ms from `now`. */
  closesInMs(now: number, windowMs: number): number {
    return Math.max(0, this.start + windowMs - now)
  }

  /** Adds one gap; true when it closed a window (the value changed). */
  record(gapMs: number, now: number, windowMs: number): boolean {
    this.sum += gapMs
    this.n++
    if (now - this.start < windowMs) return false
    this.value = this.sum / this.n
    this.gaps = this.n
    this.closedAt = now
    this.sum = 0
    this.n = 0
    this.start = now
    return true
  }
}

export class DecodeGuard {
  private readonly clock: Clock
  private readonly windowMs: number
  private readonly meters = new Map<string, ItlMeter>()
  /** Classes with a TPOT objective: the objective and its margin. */
  private readonly objectives = new Map<string, Objective>()
  /** For each class: the classes at or above it with a TPOT objective (the tightest binds). */
  private readonly bindingFor = new Map<string, readonly string[]>()
  /** For each class below one with a TPOT objective (headroomBelow > 0): its objective while one above is active. */
  private readonly belowObjectives = new Map<string, Objective & { readonly above: readonly string[] }>()
  /** Called when a window closes (the guard may have opened). */
  onChange: (() => void) | undefined = undefined
  /** True while `className` has had an arrival lately (its classes below then keep the headroom). */
  active: (className: string) => boolean = () => true

  constructor(
    classes: readonly GuardedClass[],
    margin: number,
    windowMs: number,
    clock: Clock,
    missTarget = 0,
    headroomBelow = 0,
  ) {
    if (!(headroomBelow >= 0 && headroomBelow < 1))
      throw new RangeError(`headroomBelow must be in [0, 1), got ${headroomBelow}`)
    this.clock = clock
    this.windowMs = windowMs
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
   * above it, and its objective below them while one of them is active.
   */
  limitMs(className: string): number {
    let limit = Number.POSITIVE_INFINITY
    for (const name of this.bindingFor.get(className) ?? []) {
      const o = this.objectives.get(name)
      if (o !== undefined) limit = Math.min(limit, limitOf(o))
    }
    const b = this.below(className)
    return b === undefined ? limit : Math.min(limit, limitOf(b))
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

  /** Records one inter-chunk gap of a stream from `endpoint`; returns the window when this closed one. */
  observe(endpoint: string, gapMs: number, now: number): ItlWindow | undefined {
    let m = this.meters.get(endpoint)
    if (m === undefined) {
      m = new ItlMeter(now)
      this.meters.set(endpoint, m)
    }
    if (!m.record(gapMs, now, this.windowMs)) return undefined
    this.onChange?.()
    return { meanMs: m.value as number, gaps: m.gaps }
  }

  /** The endpoint's current ITL, ms; undefined when nothing was measured in the last two windows. */
  itl(endpoint: string): number | undefined {
    const m = this.meters.get(endpoint)
    if (m === undefined || this.clock.now() - m.closedAt > 2 * this.windowMs) return undefined
    return m.value
  }

  /**
   * When `endpoint` may open again for a class it is closed to: when its window now open
   * closes (at its first gap past the window's length, so at least one gap from now), with
   * a new mean. The earliest time it can: a window whose mean is still over the limit keeps
   * it closed for one more.
   */
  reopenInMs(endpoint: string): number {
    const m = this.meters.get(endpoint)
    if (m === undefined) return 0
    const now = this.clock.now()
    return Math.max(m.closesInMs(now, this.windowMs), this.itl(endpoint) ?? 0)
  }

  /** The guard of `endpoint` for `className` as a forecast needs it (undefined: never measured there). */
  window(className: string, endpoint: string): GuardWindow | undefined {
    const m = this.meters.get(endpoint)
    if (m === undefined) return undefined
    return {
      windowMs: this.windowMs,
      ageMs: this.clock.now() - m.start,
      sumMs: m.sum,
      gaps: m.n,
      limitMs: this.limitMs(className),
      open: this.allows(className, endpoint),
    }
  }

  /** True when `className` may add a request to `endpoint`'s running batch now. */
  allows(className: string, endpoint: string): boolean {
    const limit = this.limitMs(className)
    if (limit === Number.POSITIVE_INFINITY) return true
    const itl = this.itl(endpoint)
    return itl === undefined || itl <= limit
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
