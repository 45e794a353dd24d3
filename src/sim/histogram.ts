/** A cumulative Prometheus-style histogram with fixed upper bounds (+Inf implied). */
export class Histogram {
  readonly bounds: readonly number[]
  /** Non-cumulative counts per bucket; the last slot is the +Inf bucket. */
  readonly counts: Float64Array
  sum = 0
  count = 0

  constructor(bounds: readonly number[]) {
    for (let i = 1; i < bounds.length; i++) {
      if (bounds[i]! <= bounds[i - 1]!) throw new Error('histogram bounds must increase')
    }
    this.bounds = bounds
    this.counts = new Float64Array(bounds.length + 1)
  }

  observe(v: number): void {
    const b = this.bounds
    let lo = 0
    let hi = b.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (v <= b[mid]!) hi = mid
      else lo = mid + 1
    }
    this.counts[lo] = this.counts[lo]! + 1
    this.sum += v
    this.count++
  }

  /** Cumulative count of observations <= bounds[i] (i = bounds.length gives the total). */
  cumulative(): number[] {
    const out: number[] = []
    let acc = 0
    for (let i = 0; i < this.counts.length; i++) {
      acc += this.counts[i]!
      out.push(acc)
    }
    return out
  }

  clone(): Histogram {
    const h = new Histogram(this.bounds)
    h.counts.set(this.counts)
    h.sum = this.sum
    h.count = this.count
    return h
  }
}

/** vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, ... up to max. */
export function buckets125(max: number): number[] {
  const out: number[] = []
  for (let e = 1; ; e *= 10) {
    for (const m of [1, 2, 5]) {
      if (m * e > max) return out
      out.push(m * e)
    }
  }
}

/** Geometric buckets: start·factor, start·factor², ... (n of them). */
export function geometricBuckets(start: number, factor: number, n: number): number[] {
  const out: number[] = []
  let v = start
  for (let i = 0; i < n; i++) {
    v *= factor
    out.push(v)
  }
  return out
}
