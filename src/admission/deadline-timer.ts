/**
 * One timer for the earliest of a set of deadlines (a pool's queued requests): re-armed only
 * when an earlier deadline comes, cleared when none is left. Its callback decides what expired.
 *
 * On real time it is a Node timer, unref'd, so it never holds the process open; given a
 * TimerClock (`slo-gateway plan`'s virtual clock), that clock runs it, so virtual time never
 * waits on a real timer.
 */
import type { Clock, TimerClock } from '../clock.js'

export class DeadlineTimer {
  private timer: NodeJS.Timeout | undefined = undefined
  private cancel: (() => void) | undefined = undefined
  private at = Number.POSITIVE_INFINITY

  constructor(
    private readonly clock: Clock,
    private readonly onDue: () => void,
    private readonly timers?: TimerClock,
  ) {}

  /** Arms for `next` (the earliest deadline now), or clears when there is none. */
  arm(next: number | undefined): void {
    if (next === undefined) {
      this.clear()
      return
    }
    if (this.armed && next >= this.at) return
    this.clear()
    this.at = next
    const due = () => {
      this.timer = undefined
      this.cancel = undefined
      this.at = Number.POSITIVE_INFINITY
      this.onDue()
    }
    const delay = Math.max(0, next - this.clock.now())
    if (this.timers !== undefined) this.cancel = this.timers.schedule(delay, due)
    else {
      this.timer = setTimeout(due, delay)
      this.timer.unref()
    }
  }

  private get armed(): boolean {
    return this.timer !== undefined || this.cancel !== undefined
  }

  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.cancel?.()
    this.timer = undefined
    this.cancel = undefined
    this.at = Number.POSITIVE_INFINITY
  }
}
