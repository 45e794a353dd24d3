/**
 * A fixed-size quantile sketch with bounded relative error (the DDSketch idea with a
 * fixed, dense index range): value v > MIN falls in bin i = ceil(log_gamma(v / MIN)),
 * which covers (MIN * gamma^(i-1), MIN * gamma^i]; bin 0 holds v <= MIN. A quantile is
 * answered with the bin's representative 2 * MIN * gamma^i / (gamma + 1), within
 * (gamma - 1) / (gamma + 1) (2%) of the true sample, for values in [MIN, MAX].
 * Values above MAX are clamped into the last bin. Memory: one Uint32Array of BINS.
 * Sketches merge by adding bins, so per-interval sketches roll into windows.
 */

/** Relative accuracy 2%. */
export const GAMMA = 1.02 / 0.98
/** Smallest distinguished value (milliseconds when used for latencies). */
export const MIN = 0.1
/** Largest distinguished value: 10^7 ms (2.8 h). */
export const MAX = 1e7
const LOG_GAMMA = Math.log(GAMMA)
export const BINS = Math.ceil(Math.log(MAX / MIN) / LOG_GAMMA) + 1

export class Sketch {
  readonly bins = new Uint32Array(BINS)
  count = 0

  add(v: number): void {
    if (!(v >= 0)) return // NaN and negatives are not latencies
    this.bins[binOf(v)]! += 1
    this.count++
  }

  clear(): void {
    if (this.count === 0) return
    this.bins.fill(0)
    this.count = 0
  }

  /** Add another sketch's samples into this one. */
  merge(other: Sketch): void {
    if (other.count === 0) return
    const a = this.bins
    const b = other.bins
    for (let i = 0; i < BINS; i++) a[i]! += b[i]!
    this.count += other.count
  }

  /** Nearest-rank quantile (q in [0, 1]); undefined when empty. */
  quantile(q: number): number | undefined {
    if (this.count === 0) return undefined
    const rank = Math.max(1, Math.ceil(q * this.count))
    let seen = 0
    for (let i = 0; i < BINS; i++) {
      seen += this.bins[i]!
      if (seen >= rank) return representative(i)
    }
    return representative(BINS - 1)
  }
}

function binOf(v: number): number {
  if (v <= MIN) return 0
  const i = Math.ceil(Math.log(v / MIN) / LOG_GAMMA)
  return i >= BINS ? BINS - 1 : i
}

function representative(i: number): number {
  if (i === 0) return MIN
  return (2 * MIN * GAMMA ** i) / (GAMMA + 1)
}
