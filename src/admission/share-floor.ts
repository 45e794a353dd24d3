/**
 * The floor of one class in one pool: a class with `min_share` s gets at least s of the
 * prompt tokens the pool dispatches while it has requests queued, whatever the classes
 * above it want.
 *
 * It is kept as a deficit, in prompt tokens (deficit round robin between the classes):
 * every dispatch of x tokens while the class has requests queued (its own included)
 * credits it s·x; each of its own dispatches costs it x. The class is *due* when its credit
 * covers its next request: serving it then keeps the class at or below its share, never
 * ahead of it. Due, it is served before the classes above it; not due, strict priority
 * holds. Over a long backlog above it, the class therefore gets s of the tokens to within
 * one request (not one request per window, as a ratio measured on a sliding window would).
 *
 * Work-conserving: nothing accrues while the class has nothing queued, and the credit it
 * has not used is forfeited when its queue empties, so a share it does not use goes to the
 * others; what it takes beyond its share while nobody above it waits is charged as a debt.
 *
 * The sliding window (min_share_window_ms) bounds what is remembered: credit and debt never
 * exceed the class's share of the tokens dispatched while it was queued in the last window
 * (or one request, when that is more). So a class blocked for a while (its own KV limit) is
 * owed at most one window's share when it opens, not a burst, and a class that had the pool
 * to itself is back at its floor within one window of the backlog above it forming.
 */

/** Sum and largest value added over the last `windowMs`, in BUCKETS buckets of windowMs/BUCKETS. */
export class SlidingTokens {
  private static readonly BUCKETS = 10
  private readonly widthMs: number
  private readonly stamp = new Array<number>(SlidingTokens.BUCKETS).fill(Number.NEGATIVE_INFINITY)
  private readonly sums = new Array<number>(SlidingTokens.BUCKETS).fill(0)
  private readonly maxes = new Array<number>(SlidingTokens.BUCKETS).fill(0)

  constructor(windowMs: number) {
    if (!(windowMs > 0)) throw new RangeError(`windowMs must be > 0, got ${windowMs}`)
    this.widthMs = windowMs / SlidingTokens.BUCKETS
  }

  add(now: number, tokens: number): void {
    const n = Math.floor(now / this.widthMs)
    const slot = mod(n, SlidingTokens.BUCKETS)
    if (this.stamp[slot] !== n) {
      this.stamp[slot] = n
      this.sums[slot] = 0
      this.maxes[slot] = 0
    }
    this.sums[slot]! += tokens
    this.maxes[slot] = Math.max(this.maxes[slot]!, tokens)
  }

  /** The sum and the largest value added in the last window (the current bucket included). */
  read(now: number): { sum: number; max: number } {
    const n = Math.floor(now / this.widthMs)
    let sum = 0
    let max = 0
    for (let i = 0; i < SlidingTokens.BUCKETS; i++) {
      const s = this.stamp[i]!
      if (s > n - SlidingTokens.BUCKETS && s <= n) {
        sum += this.sums[i]!
        max = Math.max(max, this.maxes[i]!)
      }
    }
    return { sum, max }
  }
}

export class ShareFloor {
  readonly share: number
  /** Prompt tokens owed to the class (negative: taken beyond its share). */
  private credit = 0
  /** Tokens dispatched (by any class) while this class had requests queued. */
  private readonly seen: SlidingTokens

  constructor(share: number, windowMs: number) {
    if (!(share > 0 && share <= 1)) throw new RangeError(`min share must be in (0, 1], got ${share}`)
    this.share = share
    this.seen = new SlidingTokens(windowMs)
  }

  /**
   * `tokens` were dispatched at `now` while this class had requests queued; `own`: they were
   * this class's. `headTokens`: the class's next request after this dispatch (0: none), so
   * that what it is owed can always cover one request.
   */
  record(now: number, tokens: number, own: boolean, headTokens: number): void {
    this.seen.add(now, tokens)
    this.credit = this.bounded(now, this.credit + this.share * tokens - (own ? tokens : 0), headTokens)
  }

  /** True when serving its next request, of `headTokens`, at `now` keeps the class within its share. */
  due(now: number, headTokens: number): boolean {
    return this.bounded(now, this.credit, headTokens) >= (1 - this.share) * headTokens
  }

  /** The class's queue emptied: a share it did not use goes to the others (a debt stays). */
  emptied(): void {
    this.credit = Math.min(0, this.credit)
  }

  /** What the class is owed now, prompt tokens (for /admin/state). */
  owed(now: number): number {
    return this.bounded(now, this.credit, 0)
  }

  /** `credit` within ± the class's share of the last window (at least its largest request, and `headTokens`). */
  private bounded(now: number, credit: number, headTokens: number): number {
    const { sum, max } = this.seen.read(now)
    const bound = Math.max(this.share * sum, max, headTokens)
    return Math.min(bound, Math.max(-bound, credit))
  }
}

function mod(a: number, n: number): number {
  return ((a % n) + n) % n
}
