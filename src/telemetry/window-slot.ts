/**
 * One 5-second slot of a class's rolling windows (rolling-windows.ts): counters, refusals
 * by reason, degradations by action, two fixed-size quantile sketches (TTFT, TPOT), and
 * what the estimator predicted against what came (ttft-scatter.ts keeps the points).
 * Reused in place when the ring comes round: no allocation per request.
 */
import { Sketch } from './sketch.js'

export class Slot {
  index = -1
  invalid = 0
  clientErrors = 0
  offered = 0
  admitted = 0
  good = 0
  goodTokens = 0
  missed = 0
  missedTtft = 0
  missedTpot = 0
  missedE2e = 0
  outputTokens = 0
  tokens = 0
  rejected = 0
  degraded = 0
  errors = 0
  cancelled = 0
  cost = 0
  readonly rejectedBy = new Map<string, number>()
  /** Degrade actions taken (a request may take several), by action name. */
  readonly degradedBy = new Map<string, number>()
  readonly ttft = new Sketch()
  readonly tpot = new Sketch()

  reset(index: number): void {
    this.index = index
    this.invalid = 0
    this.clientErrors = 0
    this.offered = 0
    this.admitted = 0
    this.good = 0
    this.goodTokens = 0
    this.missed = 0
    this.missedTtft = 0
    this.missedTpot = 0
    this.missedE2e = 0
    this.outputTokens = 0
    this.tokens = 0
    this.rejected = 0
    this.degraded = 0
    this.errors = 0
    this.cancelled = 0
    this.cost = 0
    this.rejectedBy.clear()
    this.degradedBy.clear()
    this.ttft.clear()
    this.tpot.clear()
  }
}

/** Adds `n` to `key`'s count in `m`. */
export function bump(m: Map<string, number>, key: string, n = 1): void {
  m.set(key, (m.get(key) ?? 0) + n)
}
