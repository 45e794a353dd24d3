import { Histogram } from './histogram.js'
import { SampleRing } from './sample-ring.js'
import type { FinishReason } from './sim-request.js'

/** The request-level distributions an engine can record; a metric format picks buckets for each. */
export type SeriesName =
  | 'ttft'
  | 'itl'
  | 'e2e'
  | 'queue'
  | 'prefill'
  | 'decode'
  | 'inference'
  | 'tpotRequest'
  | 'promptTokens'
  | 'generationTokens'
  | 'iterationTokens'

export type BucketSpec = Partial<Record<SeriesName, readonly number[]>>

/** Step lag buckets (seconds): fine below 10 ms, where a healthy simulator lives. */
export const STEP_LAG_BUCKETS = [
  0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
]

/** Tokens per second over the last few whole seconds of engine time. */
export class RateWindow {
  private readonly slots = new Float64Array(8)
  private readonly stamps = new Float64Array(8).fill(-1)

  add(nowMs: number, n: number): void {
    const sec = Math.floor(nowMs / 1000)
    const i = sec % 8
    if (this.stamps[i] !== sec) {
      this.stamps[i] = sec
      this.slots[i] = 0
    }
    this.slots[i] = this.slots[i]! + n
  }

  /** Average over the 5 whole seconds before the current one. */
  perSecond(nowMs: number): number {
    const sec = Math.floor(nowMs / 1000)
    let total = 0
    for (let s = sec - 5; s < sec; s++) {
      const i = ((s % 8) + 8) % 8
      if (this.stamps[i] === s) total += this.slots[i]!
    }
    return total / 5
  }
}

/** Counters and histograms of one engine, in the units Prometheus expects (seconds, tokens). */
export class EngineStats {
  requestsReceived = 0
  promptTokens = 0
  generationTokens = 0
  preemptions = 0
  readonly finished: Record<FinishReason, number> = { stop: 0, length: 0, abort: 0 }
  prefixQueries = 0
  prefixHits = 0
  steps = 0
  /** Sum over steps of the sequences scheduled (llama.cpp's busy slots). */
  busySlots = 0
  prefillSeconds = 0
  decodeSeconds = 0
  readonly generationRate = new RateWindow()
  readonly promptRate = new RateWindow()
  readonly hist: Partial<Record<SeriesName, Histogram>> = {}
  readonly stepLag = new Histogram(STEP_LAG_BUCKETS)
  /** The most recent step lags in ms, for percentiles (the bench). */
  readonly recentStepLagMs = new SampleRing()

  constructor(buckets: BucketSpec) {
    for (const [name, bounds] of Object.entries(buckets) as [SeriesName, readonly number[]][]) {
      this.hist[name] = new Histogram(bounds)
    }
  }

  observe(series: SeriesName, v: number): void {
    this.hist[series]?.observe(v)
  }
}
