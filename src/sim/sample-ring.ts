/** The last `capacity` samples of a number, for percentiles over a recent window. */
export class SampleRing {
  private readonly buf: Float64Array
  private n = 0
  private total = 0

  constructor(capacity = 65_536) {
    this.buf = new Float64Array(capacity)
  }

  add(v: number): void {
    this.buf[this.n % this.buf.length] = v
    this.n++
    this.total++
  }

  /** Samples added since construction or the last clear(). */
  get count(): number {
    return this.total
  }

  clear(): void {
    this.n = 0
    this.total = 0
  }

  /** The q-quantile (0..1) of the samples held, nearest rank; NaN when empty. */
  quantile(q: number): number {
    const len = Math.min(this.n, this.buf.length)
    if (len === 0) return Number.NaN
    const sorted = Array.from(this.buf.subarray(0, len)).sort((a, b) => a - b)
    const idx = Math.min(len - 1, Math.max(0, Math.ceil(q * len) - 1))
    return sorted[idx]!
  }
}
