/**
 * The progress line of a bench run, on stderr about once a second: elapsed time against the
 * limit, requests sent, running, ok, refused and failed so far, the TTFT median of the last
 * second's answers and the client's event-loop delay. Each tick reads only the records that
 * ended since the last one, so the line costs the client next to nothing.
 */
import type { Progress } from './bench-run.js'
import { outcomeOf } from './bench-summary.js'
import { fmt, percentile, sorted } from './report.js'

export class ProgressLine {
  private seen = 0
  private ok = 0
  private refused = 0
  private failed = 0

  constructor(
    private readonly durationS: number | undefined,
    private readonly requests: number | undefined,
  ) {}

  /** The line for this tick. */
  line(p: Progress): string {
    const ttft: number[] = []
    for (; this.seen < p.done.length; this.seen++) {
      const r = p.done[this.seen]!
      const outcome = outcomeOf(r)
      if (outcome === 'ok') {
        this.ok++
        if (r.ttftMs !== undefined) ttft.push(r.ttftMs)
      } else if (outcome === 'refused') this.refused++
      else this.failed++
    }
    const elapsed = p.elapsedMs / 1000
    const limit =
      this.durationS !== undefined
        ? `/${this.durationS}s${elapsed > this.durationS ? ' draining' : ''}`
        : this.requests !== undefined
          ? ` (${p.sent}/${this.requests} sent)`
          : ''
    const p50 = ttft.length === 0 ? '-' : `${fmt(percentile(sorted(ttft), 50), 0)} ms`
    return (
      `bench ${fmt(elapsed, 0)}s${limit}  sent ${p.sent}  running ${p.running}  ok ${this.ok}  refused ${this.refused}  ` +
      `failed ${this.failed}  TTFT P50 ${p50}  loop delay P99 ${fmt(p.loopDelayP99Ms, 1)} ms`
    )
  }
}
