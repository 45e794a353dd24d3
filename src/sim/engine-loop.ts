import type { TimerClock as Clock } from '../clock.js'
import type { SimEngine } from './engine.js'

export interface EngineLoopOptions {
  /** When a step ends more than this late, the schedule is re-anchored to now instead of catching up. */
  readonly maxCatchUpMs?: number
}

/**
 * Drives a SimEngine in time. Steps are scheduled on absolute time: step k+1 begins at the planned
 * end of step k, not at the moment the timer happened to fire, so timer lateness does not
 * accumulate (no drift). The lateness of each wake-up is recorded as the step lag.
 * When the engine has nothing to do the loop holds no timer at all; `kick()` starts it again.
 */
export class EngineLoop {
  private readonly maxCatchUpMs: number
  private deadline = 0
  private cancel: (() => void) | null = null
  private busy = false
  private stopped = false

  constructor(
    private readonly engine: SimEngine,
    private readonly clock: Clock,
    opts: EngineLoopOptions = {},
  ) {
    this.maxCatchUpMs = opts.maxCatchUpMs ?? 1000
  }

  /** True while a step is in flight or about to start. */
  get active(): boolean {
    return this.busy || this.cancel !== null
  }

  /** New work arrived: start stepping (after the current I/O phase, so same-tick arrivals batch). */
  kick(): void {
    if (this.stopped || this.busy || this.cancel !== null) return
    this.cancel = this.clock.schedule(0, () => {
      this.cancel = null
      this.startAt(this.clock.now())
    })
  }

  stop(): void {
    this.stopped = true
    this.cancel?.()
    this.cancel = null
    this.busy = false
  }

  /**
   * The pace of the step in flight changed by `factor` (a slow-down set or cleared): what is
   * left of it takes `factor` times as long. A stall that clears ends at once, as a server
   * that resumes does, not after the step it began while stalled.
   */
  rescale(factor: number): void {
    if (!this.busy || this.cancel === null || factor === 1) return
    const now = this.clock.now()
    this.deadline = now + Math.max(0, this.deadline - now) * factor
    this.cancel()
    this.arm()
  }

  private startAt(t: number): void {
    if (this.stopped) return
    const d = this.engine.beginStep(t)
    if (d === null) {
      this.busy = false
      return
    }
    this.busy = true
    this.deadline = t + d
    this.arm()
  }

  private arm(): void {
    this.cancel = this.clock.schedule(this.deadline - this.clock.now(), this.onWake)
  }

  private readonly onWake = (): void => {
    this.cancel = null
    if (this.stopped) return
    const now = this.clock.now()
    if (now < this.deadline - 1) {
      this.arm()
      return
    }
    const lag = Math.max(0, now - this.deadline)
    this.engine.stats.recentStepLagMs.add(lag)
    this.engine.stats.stepLag.observe(lag / 1000)
    this.engine.finishStep(this.deadline)
    this.startAt(lag > this.maxCatchUpMs ? now : this.deadline)
  }
}
