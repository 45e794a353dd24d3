/**
 * In-process rolling windows (1 min, 5 min) per class, for /admin/state and the summary
 * log line. Memory is fixed per class: a ring of 60 slots of 5 s, each holding counters
 * and two fixed-size quantile sketches (TTFT, TPOT). A window is the slots of the last
 * 1 or 5 minutes including the current, partial one; rates divide by the time those slots
 * actually cover (never more than since the windows were created).
 *
 * Every request lands in exactly one count, so the window adds up:
 *   requests = offered + clientErrors + invalid
 *   offered  = good + missed + rejected + errors + cancelled
 *   admitted = offered - rejected
 * Client errors (the model server's 4xx on the client's input) and invalid requests (the
 * gateway's own 4xx) are not offered load: they count in `requests`, not in attainment.
 */

import { Sketch } from './sketch.js'
import { TtftScatter } from './ttft-scatter.js'
import type { SloName, Verdict } from './verdict.js'
import { bump, Slot } from './window-slot.js'

export const SLOT_MS = 5_000
const SLOTS = 60
export const WINDOWS = { '1m': 60_000, '5m': 300_000 } as const
export type WindowName = keyof typeof WINDOWS

/** What one finished request adds to its class's window. */
export interface WindowSample {
  readonly verdict: Verdict
  readonly degraded: boolean
  /** The degrade actions the request took, by (bounded) name; empty when not degraded. */
  readonly degradedActions?: readonly string[]
  /** A failure that is the service's fault (counts against availability). */
  readonly serverError: boolean
  readonly ttftS: number | undefined
  readonly tpotS: number | undefined
  readonly outputTokens: number
  /** Prompt + completion tokens processed (for cost per 1K tokens). */
  readonly tokens: number
  /** The estimator's prediction, for an admitted request that has a measured TTFT. */
  readonly predictedTtftMs?: number | undefined
  /** The pool that served it, if any. */
  readonly pool?: string | undefined
}

export interface Quantiles {
  readonly p50: number | null
  readonly p90: number | null
  readonly p99: number | null
}

export interface WindowStats {
  /** Seconds the window actually covers. */
  readonly spanS: number
  /** Every request that finished: offered + clientErrors + invalid. */
  readonly requests: number
  /** Bad input refused by the gateway itself (its own 4xx): not offered load. */
  readonly invalid: number
  /** The model server's 4xx on the client's input (not 408/429): not offered load. */
  readonly clientErrors: number
  /** good + missed + rejected + errors + cancelled. */
  readonly offered: number
  /** offered - rejected. */
  readonly admitted: number
  readonly good: number
  /** Succeeded but missed at least one objective of the class. */
  readonly missed: number
  /** Missed requests by objective (a request can miss several: these may sum above `missed`). */
  readonly missedBy: Readonly<Record<SloName, number>>
  readonly rejected: number
  readonly degraded: number
  /** Failures that are the service's fault (transport, upstream 5xx/408/429, gateway). */
  readonly errors: number
  readonly cancelled: number
  readonly offeredRps: number
  /** Good requests per second. */
  readonly goodputRps: number
  /** Output tokens of good requests per second. */
  readonly goodputTokensPerS: number
  /** All output tokens per second (raw throughput, for comparison). */
  readonly throughputTokensPerS: number
  /** good / offered (missed, rejections, errors and cancellations count against it; client errors and invalid do not). */
  readonly attainment: number | null
  /** good / admitted. */
  readonly attainmentAdmitted: number | null
  /** degraded / admitted. */
  readonly degradationRate: number | null
  /** rejected / offered. */
  readonly rejectionRate: number | null
  readonly rejectionsByReason: Record<string, number>
  /** Degrade actions taken, by action (a request may take several). */
  readonly degradationsByAction: Record<string, number>
  /** Server-side errors / admitted (1 - availability). */
  readonly errorRate: number | null
  readonly cost: number
  readonly tokens: number
  readonly costPer1kTokens: number | null
  readonly ttftMs: Quantiles
  readonly tpotMs: Quantiles
}

/** One class's last 5 minutes, slot by slot (ClassWindows.series). */
export interface WindowSeries {
  readonly slotMs: number
  /** Gateway clock (ms) at which the first slot starts. */
  readonly startMs: number
  readonly spanS: number[]
  readonly offered: number[]
  readonly admitted: number[]
  readonly good: number[]
  readonly rejected: number[]
  readonly ttftP50: (number | null)[]
  readonly ttftP99: (number | null)[]
  readonly tpotP50: (number | null)[]
  readonly tpotP99: (number | null)[]
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
  /** Predicted against actual TTFT of the class's last requests. */
  readonly scatter = new TtftScatter()

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
    if (v.kind === 'invalid') {
      s.invalid++
      return
    }
    if (v.kind === 'client_error') {
      s.clientErrors++
      return
    }
    s.offered++
    if (v.kind === 'rejected') {
      s.rejected++
      bump(s.rejectedBy, v.reason)
      return
    }
    s.admitted++
    if (x.degraded) s.degraded++
    if (x.degradedActions !== undefined) for (const a of x.degradedActions) bump(s.degradedBy, a)
    if (x.serverError) s.errors++
    if (v.kind === 'cancelled') s.cancelled++
    if (v.kind === 'good') {
      s.good++
      s.goodTokens += x.outputTokens
    } else if (v.kind === 'missed') {
      s.missed++
      for (const slo of v.missed) {
        if (slo === 'ttft') s.missedTtft++
        else if (slo === 'tpot') s.missedTpot++
        else s.missedE2e++
      }
    }
    if (x.ttftS !== undefined) {
      s.ttft.add(x.ttftS * 1000)
      if (x.predictedTtftMs !== undefined)
        this.scatter.add(now, x.pool ?? '', x.predictedTtftMs, x.ttftS * 1000)
    }
    if (x.tpotS !== undefined) s.tpot.add(x.tpotS * 1000)
  }

  addCost(now: number, amount: number): void {
    this.slot(now).cost += amount
  }

  /**
   * The last 5 minutes slot by slot, oldest first (columns of SLOTS values): what each
   * 5-second slot counted and the seconds it covers (5, less for the current slot or one
   * before the windows began, 0 for a slot before that). Latencies in ms, null when none.
   */
  series(now: number): WindowSeries {
    const current = Math.floor(now / SLOT_MS)
    const oldest = current - SLOTS + 1
    const out: WindowSeries = {
      slotMs: SLOT_MS,
      startMs: oldest * SLOT_MS,
      spanS: [],
      offered: [],
      admitted: [],
      good: [],
      rejected: [],
      ttftP50: [],
      ttftP99: [],
      tpotP50: [],
      tpotP99: [],
    }
    for (let index = oldest; index <= current; index++) {
      const from = Math.max(index * SLOT_MS, this.createdAt)
      const to = Math.min((index + 1) * SLOT_MS, now)
      out.spanS.push(Math.max(0, to - from) / 1000)
      const s = this.slots[((index % SLOTS) + SLOTS) % SLOTS]!
      const live = s.index === index
      out.offered.push(live ? s.offered : 0)
      out.admitted.push(live ? s.admitted : 0)
      out.good.push(live ? s.good : 0)
      out.rejected.push(live ? s.rejected : 0)
      out.ttftP50.push(live ? round(s.ttft.quantile(0.5)) : null)
      out.ttftP99.push(live ? round(s.ttft.quantile(0.99)) : null)
      out.tpotP50.push(live ? round(s.tpot.quantile(0.5)) : null)
      out.tpotP99.push(live ? round(s.tpot.quantile(0.99)) : null)
    }
    return out
  }

  stats(now: number, windowMs: number): WindowStats {
    const current = Math.floor(now / SLOT_MS)
    const n = Math.min(SLOTS, Math.ceil(windowMs / SLOT_MS))
    const oldest = current - n + 1
    const spanS = Math.max(0, now - Math.max(oldest * SLOT_MS, this.createdAt)) / 1000
    const t = { offered: 0, admitted: 0, good: 0, goodTokens: 0, outputTokens: 0, tokens: 0 }
    const u = { rejected: 0, degraded: 0, errors: 0, cancelled: 0, cost: 0 }
    const x = { invalid: 0, clientErrors: 0, missed: 0, ttft: 0, tpot: 0, e2e: 0 }
    const byReason: Record<string, number> = {}
    const byAction: Record<string, number> = {}
    this.scratchTtft.clear()
    this.scratchTpot.clear()
    for (const s of this.slots) {
      if (s.index < oldest || s.index > current) continue
      x.invalid += s.invalid
      x.clientErrors += s.clientErrors
      x.missed += s.missed
      x.ttft += s.missedTtft
      x.tpot += s.missedTpot
      x.e2e += s.missedE2e
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
      for (const [a, c] of s.degradedBy) byAction[a] = (byAction[a] ?? 0) + c
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
      requests: t.offered + x.clientErrors + x.invalid,
      invalid: x.invalid,
      clientErrors: x.clientErrors,
      offered: t.offered,
      admitted: t.admitted,
      good: t.good,
      missed: x.missed,
      missedBy: { ttft: x.ttft, tpot: x.tpot, e2e: x.e2e },
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
      degradationsByAction: byAction,
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
