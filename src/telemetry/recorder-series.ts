/**
 * The metric children the recorder caches per label set, so the request path looks each
 * set up once (see Recorder): per (class, model, tenant), per (class, model), and per
 * latency bucket.
 */

export type Inc = { inc(v?: number): void }
export type Obs = { observe(v: number): void }

/**
 * The children of one (class, model, tenant), looked up in the series caches once and then
 * reused; filled as first used, so series appear exactly when they did without this.
 * Dropped whenever tenants are evicted (their children are removed from the metrics).
 */
export interface TenantSeries {
  readonly byOutcome: Map<string, Inc>
  prompt: Inc | undefined
  completion: Inc | undefined
  good: Inc | undefined
  goodTokens: Inc | undefined
  missed: Inc | undefined
}

/** The latency histograms' children of one (class, model, prompt_len, output_len). */
export interface LatencySeries {
  ttft: Obs | undefined
  tpot: Obs | undefined
  e2e: Obs | undefined
}

/** The children of one (class, model) (no tenant label: never evicted). */
export interface ModelSeries {
  itl: Obs | undefined
  queueWait: Obs | undefined
  predictionError: Obs | undefined
  /** prompt_len -> output_len -> children */
  readonly latency: Map<string, Map<string, LatencySeries>>
}

/** The latency children of one (prompt_len, output_len) bucket of a (class, model). */
export function latencySeriesOf(perModel: ModelSeries, pl: string, ol: string): LatencySeries {
  let byOutput = perModel.latency.get(pl)
  if (byOutput === undefined) {
    byOutput = new Map()
    perModel.latency.set(pl, byOutput)
  }
  let s = byOutput.get(ol)
  if (s === undefined) {
    s = { ttft: undefined, tpot: undefined, e2e: undefined }
    byOutput.set(ol, s)
  }
  return s
}
