/**
 * The one injectable clock. Everything that reasons about time (estimator, limiter,
 * queues, staleness, the simulator's engine loop) takes a Clock so tests can run on fake
 * time (ManualClock) and servers on real time (systemClock). Times are milliseconds on
 * an arbitrary monotonic origin.
 */
export interface Clock {
  now(): number
}

/** A clock that can also run something later (the simulator's engine loop needs it). */
export interface TimerClock extends Clock {
  /**
   * Runs `fn` once after `delayMs` (0 = as soon as the current I/O phase is done).
   * Returns a function that cancels it; cancelling a timer that already ran is a no-op.
   */
  schedule(delayMs: number, fn: () => void): () => void
}

/** Real time: performance.now(), setTimeout, and setImmediate for zero delays. */
export const systemClock: TimerClock = {
  now: () => performance.now(),
  schedule(delayMs, fn) {
    if (delayMs <= 0) {
      const h = setImmediate(fn)
      return () => clearImmediate(h)
    }
    // Node truncates fractional delays; the engine loop re-arms when it wakes more than 1 ms early.
    const h = setTimeout(fn, Math.floor(delayMs))
    return () => clearTimeout(h)
  },
}

interface PendingTimer {
  readonly at: number
  readonly seq: number
  readonly fn: () => void
  cancelled: boolean
}

/**
 * Fake time for tests: time moves only when `advance` or `runUntilIdle` is called, and timers run
 * in due order. `wakeLateMs` makes every timer fire that much after its due time, to test that a
 * loop scheduled on absolute time does not drift.
 */
export class ManualClock implements TimerClock {
  private t: number
  private seq = 0
  private timers: PendingTimer[] = []
  wakeLateMs = 0

  constructor(start = 0) {
    this.t = start
  }

  now(): number {
    return this.t
  }

  schedule(delayMs: number, fn: () => void): () => void {
    const timer: PendingTimer = { at: this.t + Math.max(0, delayMs), seq: this.seq++, fn, cancelled: false }
    this.timers.push(timer)
    return () => {
      timer.cancelled = true
    }
  }

  /** Number of timers that have not run and were not cancelled. */
  get pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length
  }

  /** Advances time by `ms`, running every timer that falls due on the way (and those they schedule). */
  advance(ms: number): void {
    const end = this.t + ms
    for (;;) {
      const next = this.nextDue()
      if (next === undefined || next.at + this.wakeLateMs > end) break
      this.fire(next)
    }
    this.t = end
  }

  /** Runs timers until none is left or `maxMs` of fake time has passed. Returns the time reached. */
  runUntilIdle(maxMs = 3_600_000): number {
    const end = this.t + maxMs
    for (;;) {
      const next = this.nextDue()
      if (next === undefined || next.at + this.wakeLateMs > end) break
      this.fire(next)
    }
    return this.t
  }

  private fire(timer: PendingTimer): void {
    this.timers = this.timers.filter((t) => t !== timer)
    this.t = Math.max(this.t, timer.at + this.wakeLateMs)
    timer.fn()
  }

  private nextDue(): PendingTimer | undefined {
    this.timers = this.timers.filter((t) => !t.cancelled)
    let best: PendingTimer | undefined
    for (const t of this.timers) {
      if (best === undefined || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t
    }
    return best
  }
}
