/**
 * Decode guard: a class may dispatch only while it and every class above it that sets a
 * TPOT objective is decoding within it (its recent TPOT under SLO x (1 - margin)). A class
 * over its own objective stops adding sequences to the running batch until the batch
 * drains; its queue then grows, and new arrivals are refused on their predicted TTFT.
 *
 * Every sequence in the running batch makes each engine step longer, and every prompt
 * dispatched adds prefill to the steps; so batch traffic that fills "the capacity
 * interactive leaves" by KV and slots alone can still push interactive TPOT over its
 * objective. The recent TPOT of each class with an objective is a moving average over its
 * finished streamed requests; with no sample for `staleMs` it no longer holds anyone back
 * (the interactive traffic went away, or the guard has nothing to go on).
 */
import type { Clock } from '../clock.js'

export interface GuardedClass {
  readonly name: string
  readonly priority: number
  readonly tpotMs: number | undefined
}

const ALPHA = 0.2

export class TpotGuard {
  private readonly clock: Clock
  private readonly margin: number
  private readonly staleMs: number
  private readonly recent = new Map<string, { tpotMs: number; at: number }>()
  /** For each class: itself and the classes above it with a TPOT objective. */
  private readonly above = new Map<string, GuardedClass[]>()

  constructor(classes: readonly GuardedClass[], margin: number, staleMs: number, clock: Clock) {
    this.clock = clock
    this.margin = margin
    this.staleMs = staleMs
    for (const c of classes) {
      this.above.set(
        c.name,
        classes.filter((o) => o.priority <= c.priority && o.tpotMs !== undefined),
      )
    }
  }

  /** A finished streamed request of `className` decoded at `tpotMs` per token. */
  observe(className: string, tpotMs: number): void {
    const prev = this.recent.get(className)
    const now = this.clock.now()
    const fresh = prev !== undefined && now - prev.at < this.staleMs
    this.recent.set(className, {
      tpotMs: fresh ? prev.tpotMs + ALPHA * (tpotMs - prev.tpotMs) : tpotMs,
      at: now,
    })
  }

  /** True when neither `className` nor a class above it is at risk of missing its TPOT objective. */
  allows(className: string): boolean {
    const above = this.above.get(className)
    if (above === undefined || above.length === 0) return true
    const now = this.clock.now()
    for (const c of above) {
      const r = this.recent.get(c.name)
      if (r === undefined || now - r.at >= this.staleMs) continue
      if (r.tpotMs > (c.tpotMs as number) * (1 - this.margin)) return false
    }
    return true
  }

  state(): Record<string, number> {
    return Object.fromEntries([...this.recent].map(([k, v]) => [k, Math.round(v.tpotMs * 100) / 100]))
  }
}
