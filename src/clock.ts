/**
 * The one injectable clock. Everything that reasons about time (estimator, limiter,
 * queues, staleness) takes a Clock so tests can run on fake time.
 */
export interface Clock {
  /** Monotonic milliseconds. */
  now(): number
}

export const systemClock: Clock = { now: () => performance.now() }

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  private t: number
  constructor(start = 0) {
    this.t = start
  }
  now(): number {
    return this.t
  }
  advance(ms: number): void {
    this.t += ms
  }
}
