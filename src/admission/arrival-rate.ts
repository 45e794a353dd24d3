/**
 * Prompt tokens arriving per ms, per class: a decayed sum (time constant TAU_MS) of the
 * tokens admitted to compute. A request queued now shares its dispatch with those that
 * arrive behind it while it waits, as far as its endpoint's prefill budget has room
 * (dispatch-forecast.ts): this says how many to expect.
 */
import type { Clock } from '../clock.js'

const TAU_MS = 2000

export class ArrivalRate {
  private readonly clock: Clock
  private readonly sums = new Map<string, { value: number; at: number }>()

  constructor(clock: Clock) {
    this.clock = clock
  }

  /** A request of `className` with `tokens` to compute was placed. */
  arrived(className: string, tokens: number): void {
    const now = this.clock.now()
    const s = this.sums.get(className)
    if (s === undefined) {
      this.sums.set(className, { value: tokens, at: now })
      return
    }
    s.value = s.value * Math.exp(-(now - s.at) / TAU_MS) + tokens
    s.at = now
  }

  /** Tokens per ms of `className` lately. */
  tokensPerMs(className: string): number {
    const s = this.sums.get(className)
    if (s === undefined) return 0
    return (s.value * Math.exp(-(this.clock.now() - s.at) / TAU_MS)) / TAU_MS
  }
}
