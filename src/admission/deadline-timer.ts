/**
 * One timer for the earliest of a set of deadlines (a pool's queued requests): re-armed only
 * when an earlier deadline comes, cleared when none is left; unref'd, so it never holds the
 * process open. Its callback decides what expired.
 */
import type { Clock } from '../clock.js'

export class DeadlineTimer {
  private timer: NodeJS.Timeout | undefined = undefined
  private at = Number.POSITIVE_INFINITY

  constructor(
    private readonly clock: Clock,
    private readonly onDue: () => void,
  ) {}

  /** Arms for `next` (the earliest deadline now), or clears when there is none. */
  arm(next: number | undefined): void {
    if (next === undefined) {
      this.clear()
      return
    }
    if (this.timer !== undefined && next >= this.at) return
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.at = next
    this.timer = setTimeout(
      () => {
        this.timer = undefined
        this.at = Number.POSITIVE_INFINITY
        this.onDue()
      },
      Math.max(0, next - this.clock.now()),
    )
    this.timer.unref()
  }

  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.at = Number.POSITIVE_INFINITY
  }
}
