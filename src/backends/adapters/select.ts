/**
 * Reading one number out of several series of a metric, the same way for every engine.
 *
 * One endpoint often reports a metric as several series: one per engine core (vLLM data
 * parallel, `engine="0"`, `engine="1"`), per DP rank (SGLang `dp_rank`), per served model
 * (`model_name`, e.g. a server hosting several models on the same GPUs). They all share
 * this endpoint, so the rules are:
 *
 * - counts (waiting, running, capacity tokens, counters): the SUM over series, because a
 *   request sent to the endpoint competes with all of them;
 * - ratios (KV usage 0..1): the MEAN over series, because each engine core has its own KV
 *   pool of (normally) the same size, and the engine balances new requests across them.
 *
 * Some labels only say which copy of the same number a series is (SGLang's `tp_rank`:
 * every tensor-parallel rank may report the same scheduler state). Series that differ only
 * in such "replica labels" are one value: the max of the copies is taken before summing.
 *
 * Non-finite values (NaN, ±Inf) and negative values are dropped as unreadable; when no
 * series is left the result is undefined (the field is missing, not zero).
 */
import type { PromSample, PromText } from '../prom-text.js'

export interface SelectOptions {
  /** Labels whose values only distinguish copies of the same number (deduplicated by max). */
  readonly replicaLabels?: readonly string[]
  /** Keep only the series these labels match exactly (e.g. `{ mode: 'decode' }`). */
  readonly where?: Readonly<Record<string, string>>
}

function usable(samples: readonly PromSample[] | undefined, opts: SelectOptions): number[] {
  if (samples === undefined || samples.length === 0) return []
  const where = opts.where
  const kept = samples.filter(
    (s) =>
      Number.isFinite(s.value) &&
      s.value >= 0 &&
      (where === undefined || Object.entries(where).every(([k, v]) => s.labels[k] === v)),
  )
  const replica = opts.replicaLabels
  if (replica === undefined || replica.length === 0) return kept.map((s) => s.value)
  const groups = new Map<string, number>()
  for (const s of kept) {
    const key = Object.keys(s.labels)
      .filter((k) => !replica.includes(k))
      .sort()
      .map((k) => `${k}=${s.labels[k]}`)
      .join('\u0000')
    const prev = groups.get(key)
    groups.set(key, prev === undefined ? s.value : Math.max(prev, s.value))
  }
  return [...groups.values()]
}

/** Sum over series of the first of `names` that has a readable value. */
export function sumOf(
  text: PromText,
  names: readonly string[],
  opts: SelectOptions = {},
): number | undefined {
  for (const name of names) {
    const values = usable(text.samples.get(name), opts)
    if (values.length > 0) return values.reduce((a, b) => a + b, 0)
  }
  return undefined
}

/** Mean over series of the first of `names` that has a readable value. */
export function meanOf(
  text: PromText,
  names: readonly string[],
  opts: SelectOptions = {},
): number | undefined {
  for (const name of names) {
    const values = usable(text.samples.get(name), opts)
    if (values.length > 0) return values.reduce((a, b) => a + b, 0) / values.length
  }
  return undefined
}

/** A ratio kept inside 0..1 (engines overshoot 1.0 by rounding now and then). */
export function ratio(value: number | undefined): number | undefined {
  return value === undefined ? undefined : Math.min(1, Math.max(0, value))
}

/** Reads a label as a positive number (`num_gpu_blocks="81767"`); "None" and garbage give undefined. */
export function labelNumber(sample: PromSample, label: string): number | undefined {
  const raw = sample.labels[label]
  if (raw === undefined || raw.trim() === '') return undefined
  const n = Number(raw)
  return Number.isFinite(n) && n > 0 ? n : undefined
}

/** True when the text is not an exposition at all (HTML error page, JSON, binary). */
export function isGarbage(text: PromText): boolean {
  return text.invalidLines > 0 && text.sampleCount + text.skippedLines === 0
}

/** Drops undefined fields so results compare and serialise cleanly (exactOptionalPropertyTypes). */
export function compact<T extends object>(obj: T): T {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(obj)) if (v !== undefined) out[k] = v
  return out as T
}
