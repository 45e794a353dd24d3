/**
 * The pool's dispatch rate: prompt tokens per ms released from a backlogged queue (the
 * queue drains at the pace the dispatch gates allow, whatever holds them: prefill budget,
 * KV, decode guard). Decayed sums of the tokens dispatched and of the backlogged time
 * between dispatches (about the last 50), starting from the prefill prior as one dispatch.
 */
import type { Clock } from '../clock.js'

/** Weight kept per dispatch (about the last 50 dispatches). */
const RATE_DECAY = 0.98

export class DispatchRate {
  private measured = false
  private tokens: number
  private ms = 1000
  /** Decayed count of the dispatches measured (the prior counts as one). */
  private count = 1
  private backloggedSince: number | undefined = undefined

  constructor(
    private readonly clock: Clock,
    prefillTokensPerS: number,
  ) {
    this.tokens = prefillTokensPerS
  }

  /** A new prefill prior, tokens/s: taken while no backlog was measured. */
  adoptPrior(prefillTokensPerS: number): void {
    if (!this.measured) this.tokens = prefillTokensPerS * (this.ms / 1000)
  }

  /**
   * Tokens per ms. The time since the last dispatch of a backlog counts too, beyond the mean
   * gap between dispatches: a queue that has not moved for much longer than usual is
   * draining slower than its last dispatches said (a cold start on optimistic priors, a
   * server that slowed down), and the requests arriving behind it must know.
   */
  now(): number {
    if (this.backloggedSince === undefined) return this.measuredRate()
    // beyond the mean gap between dispatches: a gap as long as usual says nothing new
    const meanGap = this.ms / this.count
    const overdue = Math.max(0, this.clock.now() - this.backloggedSince - meanGap)
    return this.tokens / (this.ms + overdue)
  }

  /** Tokens per ms of the dispatches measured, the current gap left out. */
  measuredRate(): number {
    return this.tokens / this.ms
  }

  /** The pool's queue went from empty to backlogged, or back (`backlogged` false). */
  onBacklog(backlogged: boolean): void {
    if (backlogged) this.backloggedSince ??= this.clock.now()
    else this.backloggedSince = undefined
  }

  /** `tokens` of prompt were dispatched: a sample while the queue is backlogged. */
  onDispatch(tokens: number): void {
    if (this.backloggedSince === undefined) return
    const now = this.clock.now()
    this.measured = true
    this.tokens = this.tokens * RATE_DECAY + tokens
    this.ms = this.ms * RATE_DECAY + (now - this.backloggedSince)
    this.count = this.count * RATE_DECAY + 1
    this.backloggedSince = now
  }
}
