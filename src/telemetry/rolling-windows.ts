/**
 * In-process rolling windows (1 min, 5 min) per class, for /admin/state and the summary
 * log line. Memory is fixed per class: a ring of 60 slots of 5 s, each holding counters
 * and two fixed-size quantile sketches (TTFT, TPOT). A window is the slots of the last
 * 1 or 5 minutes including the current, partial one; rates divide by the time those slots
 * actually cover (never more than since the windows were created).
 */

import { Sketch } from './sketch.js'
import type { Verdict } from './verdict.js'

export const SLOT_MS = 5_000
const SLOTS = 60
export const WINDOWS = { '1m': 60_000, '5m': 300_000 } as const
export type WindowName = keyof typeof WINDOWS

/** What one finished request adds to its class's window. */
export interface WindowSample {
  readonly verdict: Verdict
  readonly degraded: boolean
  /** A failure that is the service's fault (counts against availability). */
  readonly serverError: boolean
  readonly ttftS: number | undefined
  readonly tpotS: number | undefined
  readonly outputTokens: number
  /** Prompt + completion tokens processed (for cost per 1K tokens). */
  readonly tokens: number
}

class Slot {
  index = -1
  offered = 0
  admitted = 0
  good = 0
  goodTokens = 0
  outputTokens = 0
  tokens = 0
  rejected = 0
  degraded = 0
  errors = 0
  cancelled = 0
  cost = 0
  readonly rejectedBy = new Map<string, number>()
  readonly ttft = new Sketch()
  readonly tpot = new Sketch()

  reset(index: number): void {
    this.index = index
    this.offered = 0
    this.admitted = 0
    this.good = 0
    this.goodTokens = 0
    this.outputTokens = 0
    this.tokens = 0
    this.rejected = 0
    this.degraded = 0
    this.errors = 0
    this.cancelled = 0
    this.cost = 0
    this.rejectedBy.clear()
    this.ttft.clear()
    this.tpot.clear()
  }
}

export interface Quantiles {
  readonly p50: number | null
  readonly p90: number | null
  readonly p99: number | null
}

export interface WindowStats {
  /** Seconds the window actually covers. */
  readonly spanS: number
  readonly offered: number
  readonly admitted: number
  readonly good: number
  readonly rejected: number
  readonly degraded: number
  readonly errors: number
  readonly cancelled: number
  readonly offeredRps: number
  /** Good requests per second. */
  readonly goodputRps: number
  /** Output tokens of good requests per second. */
  readonly goodputTokensPerS: number
  /** All output tokens per second (raw throughput, for comparison). */
  readonly throughputTokensPerS: number
  /** good / offered (rejections, errors and cancellations count as misses). */
  readonly attainment: number | null
  /** good / admitted. */
  readonly attainmentAdmitted: number | null
  /** degraded / admitted. */
  readonly degradationRate: number | null
  /** rejected / offered. */
  readonly rejectionRate: number | null
  readonly rejectionsByReason: Record<string, number>
  /** Server-side errors / admitted (1 - availability). */
  readonly errorRate: number | null
  readonly cost: number
  readonly tokens: number
  readonly costPer1kTokens: number | null
  readonly ttftMs: Quantiles
  readonly tpotMs: Quantiles
}

function ratio(num: number, den: number): number | null {
  return den > 0 ? num / den : null
}

function round(v: number | undefined): number | null {
  return v === undefined ? null : Math.round(v * 1000) / 1000
}

export class ClassWindows {
  private readonly slots: Slot[] = Array.from({ length: SLOTS }, () => new Slot())
  private readonly createdAt: number
  private readonly scratchTtft = new Sketch()
  private readonly scratchTpot = new Sketch()

  constructor(createdAt: number) {
    this.createdAt = createdAt
  }

  private slot(now: number): Slot {
    const index = Math.floor(now / SLOT_MS)
    const s = this.slots[((index % SLOTS) + SLOTS) % SLOTS]!
    if (s.index !== index) s.reset(index)
    return s
  }

  record(now: number, x: WindowSample): void {
    const s = this.slot(now)
    const v = x.verdict
    s.tokens += x.tokens
    s.outputTokens += x.outputTokens
    if (v.kind === 'invalid') return
    s.offered++
    if (v.kind === 'rejected') {
      s.rejected++
      s.rejectedBy.set(v.reason, (s.rejectedBy.get(v.reason) ?? 0) + 1)
      return
    }
    s.admitted++
    if (x.degraded) s.degraded++
    if (x.serverError) s.errors++
    if (v.kind === 'cancelled') s.cancelled++
    if (v.kind === 'good') {
      s.good++
      s.goodTokens += x.outputTokens
    }
    if (x.ttftS !== undefined) s.ttft.add(x.ttftS * 1000)
    if (x.tpotS !== undefined) s.tpot.add(x.tpotS * 1000)
  }

  addCost(now: number, amount: number): void {
    this.slot(now).cost += amount
  }

  stats(now: number, windowMs: number): WindowStats {
    const current = Math.floor(now / SLOT_MS)
    const n = Math.min(SLOTS, Math.ceil(windowMs / SLOT_MS))
    const oldest = current - n + 1
    const spanS = Math.max(0, now - Math.max(oldest * SLOT_MS, this.createdAt)) / 1000
    const t = { offered: 0, admitted: 0, good: 0, goodTokens: 0, outputTokens: 0, tokens: 0 }
    const u = { rejected: 0, degraded: 0, errors: 0, cancelled: 0, cost: 0 }
    const byReason: Record<string, number> = {}
    this.scratchTtft.clear()
    this.scratchTpot.clear()
    for (const s of this.slots) {
      if (s.index < oldest || s.index > current) continue
      t.offered += s.offered
      t.admitted += s.admitted
      t.good += s.good
      t.goodTokens += s.goodTokens
      t.outputTokens += s.outputTokens
      t.tokens += s.tokens
      u.rejected += s.rejected
      u.degraded += s.degraded
      u.errors += s.errors
      u.cancelled += s.cancelled
      u.cost += s.cost
      for (const [r, c] of s.rejectedBy) byReason[r] = (byReason[r] ?? 0) + c
      this.scratchTtft.merge(s.ttft)
      this.scratchTpot.merge(s.tpot)
    }
    const per = (x: number) => (spanS > 0 ? x / spanS : 0)
    const q = (sk: Sketch): Quantiles => ({
      p50: round(sk.quantile(0.5)),
      p90: round(sk.quantile(0.9)),
      p99: round(sk.quantile(0.99)),
    })
    return {
      spanS,
      offered: t.offered,
      admitted: t.admitted,
      good: t.good,
      rejected: u.rejected,
      degraded: u.degraded,
      errors: u.errors,
      cancelled: u.cancelled,
      offeredRps: per(t.offered),
      goodputRps: per(t.good),
      goodputTokensPerS: per(t.goodTokens),
      throughputTokensPerS: per(t.outputTokens),
      attainment: ratio(t.good, t.offered),
      attainmentAdmitted: ratio(t.good, t.admitted),
      degradationRate: ratio(u.degraded, t.admitted),
      rejectionRate: ratio(u.rejected, t.offered),
      rejectionsByReason: byReason,
      errorRate: ratio(u.errors, t.admitted),
      cost: u.cost,
      tokens: t.tokens,
      costPer1kTokens: t.tokens > 0 ? u.cost / (t.tokens / 1000) : null,
      ttftMs: q(this.scratchTtft),
      tpotMs: q(this.scratchTpot),
    }
  }
}

/** Windows for every class seen (the class label is already bounded by the caller). */
export class RollingWindows {
  private readonly byClass = new Map<string, ClassWindows>()
  private readonly createdAt: number

  constructor(createdAt: number, classes: Iterable<string> = []) {
    this.createdAt = createdAt
    for (const c of classes) this.byClass.set(c, new ClassWindows(createdAt))
  }

  of(cls: string): ClassWindows {
    let w = this.byClass.get(cls)
    if (w === undefined) {
      w = new ClassWindows(this.createdAt)
      this.byClass.set(cls, w)
    }
    return w
  }

  classes(): string[] {
    return [...this.byClass.keys()]
  }

  /** `{ class: { '1m': stats, '5m': stats } }` */
  snapshot(now: number): Record<string, Record<WindowName, WindowStats>> {
    const out: Record<string, Record<WindowName, WindowStats>> = {}
    for (const [cls, w] of this.byClass) {
      out[cls] = { '1m': w.stats(now, WINDOWS['1m']), '5m': w.stats(now, WINDOWS['5m']) }
    }
    return out
  }
}
