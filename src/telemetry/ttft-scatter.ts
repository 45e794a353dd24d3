/**
 * The estimator's predicted TTFT against the TTFT that came, for the last `size` requests
 * of one class that had both (a ring: fixed memory, oldest overwritten). The dashboard
 * draws it as a scatter; `error()` summarises the same points.
 */

export const SCATTER_POINTS = 300

export interface ScatterPoint {
  /** Gateway clock (ms) when the request ended. */
  readonly at: number
  readonly pool: string
  readonly predictedMs: number
  readonly actualMs: number
}

export interface ScatterError {
  readonly n: number
  /** mean(|predicted - actual| / actual) */
  readonly meanAbsRelative: number | null
  /** mean((predicted - actual) / actual): above 0 the estimator predicts too slow, below too fast. */
  readonly meanRelative: number | null
}

export class TtftScatter {
  private readonly at: Float64Array
  private readonly predicted: Float64Array
  private readonly actual: Float64Array
  private readonly pools: string[]
  private next = 0
  private count = 0

  constructor(readonly size = SCATTER_POINTS) {
    if (!(Number.isInteger(size) && size > 0))
      throw new RangeError(`size must be a positive integer, got ${size}`)
    this.at = new Float64Array(size)
    this.predicted = new Float64Array(size)
    this.actual = new Float64Array(size)
    this.pools = new Array<string>(size).fill('')
  }

  /** One request; ignored unless both times are finite and the actual one is above 0. */
  add(at: number, pool: string, predictedMs: number, actualMs: number): void {
    if (!(Number.isFinite(predictedMs) && predictedMs >= 0 && Number.isFinite(actualMs) && actualMs > 0))
      return
    const i = this.next
    this.at[i] = at
    this.predicted[i] = predictedMs
    this.actual[i] = actualMs
    this.pools[i] = pool
    this.next = (i + 1) % this.size
    if (this.count < this.size) this.count++
  }

  /** The points, oldest first. */
  points(): ScatterPoint[] {
    const out: ScatterPoint[] = []
    const first = (this.next - this.count + this.size) % this.size
    for (let k = 0; k < this.count; k++) {
      const i = (first + k) % this.size
      out.push({
        at: this.at[i]!,
        pool: this.pools[i]!,
        predictedMs: this.predicted[i]!,
        actualMs: this.actual[i]!,
      })
    }
    return out
  }

  error(): ScatterError {
    if (this.count === 0) return { n: 0, meanAbsRelative: null, meanRelative: null }
    let abs = 0
    let signed = 0
    for (let i = 0; i < this.count; i++) {
      const r = (this.predicted[i]! - this.actual[i]!) / this.actual[i]!
      abs += Math.abs(r)
      signed += r
    }
    return { n: this.count, meanAbsRelative: abs / this.count, meanRelative: signed / this.count }
  }
}
