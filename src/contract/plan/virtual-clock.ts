/**
 * The plan's virtual time: a TimerClock whose time moves only when the driver (virtual-run.ts)
 * moves it, and whose timers (admission's dispatcher and deadline timer) the driver runs at
 * their instant, in due order. Nothing here waits on a real timer: a run of thousands of
 * simulated seconds is as long as its events take to compute.
 *
 * Zero-delay timers (the gateway's setImmediate: "once this I/O phase is done") run at the
 * same instant, after the events that scheduled them.
 */
import { type HeapNode, IndexedMinHeap } from '../../admission/min-heap.js'
import type { TimerClock } from '../../clock.js'

interface VirtualTimer extends HeapNode {
  readonly at: number
  readonly seq: number
  readonly fn: () => void
}

export class VirtualClock implements TimerClock {
  t = 0
  private seq = 0
  private readonly timers = new IndexedMinHeap<VirtualTimer>(
    (a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq),
  )

  now = (): number => this.t

  schedule(delayMs: number, fn: () => void): () => void {
    const timer: VirtualTimer = { at: this.t + Math.max(0, delayMs), seq: this.seq++, fn, heapIndex: -1 }
    this.timers.push(timer)
    return () => {
      this.timers.remove(timer)
    }
  }

  /** When the earliest timer is due (Infinity: none). */
  get nextTimerAt(): number {
    return this.timers.peek()?.at ?? Number.POSITIVE_INFINITY
  }

  /** Runs every timer due by now, and those they schedule for now, in due order. */
  runDue(): void {
    for (let next = this.timers.peek(); next !== undefined && next.at <= this.t; next = this.timers.peek()) {
      this.timers.pop()
      next.fn()
    }
  }
}
