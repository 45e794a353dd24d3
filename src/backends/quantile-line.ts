/**
 * The slope of a low quantile line through points (linear quantile regression, Koenker and
 * Bassett): the line y = a + b·x that minimises the pinball loss Σ ρ_q(y − a − b·x), where
 * ρ_q(r) = q·r above the line and (q − 1)·r below it, so that about a fraction q of the
 * points lie under it.
 *
 * Why not least squares: the times a gateway measures (dispatch to first token) are the
 * engine's work plus delays that only ever add (a busy event loop, a late timer, a GC
 * pause, a first request on a cold connection, another client's request at the server).
 * Those are one-sided and heavy-tailed; one of them on a short prompt tilts a least-squares
 * line, and with a handful of samples that moves the slope by 10% or more. A low quantile
 * follows the undelayed samples and ignores how large the delays are.
 *
 * The optimum passes through two of the points, and the loss, minimised over the intercept,
 * is convex in the slope; so the slope is found by a binary search over the sorted pairwise
 * slopes, each step costing one pass over the points. n points: O(n² log n).
 */

export interface Point {
  readonly x: number
  readonly y: number
}

/**
 * The slope of the `q` quantile line through `points` (0 < q < 1); undefined with fewer
 * than two distinct x.
 */
export function quantileSlope(points: readonly Point[], q: number): number | undefined {
  if (!(q > 0 && q < 1)) throw new RangeError(`quantileSlope: q must be in (0, 1), got ${q}`)
  const slopes: number[] = []
  for (let i = 0; i < points.length; i++) {
    const p = points[i] as Point
    for (let j = i + 1; j < points.length; j++) {
      const o = points[j] as Point
      if (o.x !== p.x) slopes.push((o.y - p.y) / (o.x - p.x))
    }
  }
  if (slopes.length === 0) return undefined
  slopes.sort((a, b) => a - b)
  const residuals = new Float64Array(points.length)
  const loss = (b: number): number => lossAt(points, b, q, residuals)
  // convex over the sorted candidates: the first i whose successor is no better
  let lo = 0
  let hi = slopes.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (loss(slopes[mid + 1] as number) >= loss(slopes[mid] as number)) hi = mid
    else lo = mid + 1
  }
  return slopes[lo]
}

/** The q quantile of `values` (the ⌈q·n⌉-th smallest); undefined when empty. */
export function lowQuantile(values: readonly number[], q: number): number | undefined {
  if (values.length === 0) return undefined
  const sorted = values.slice().sort((a, b) => a - b)
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]
}

/** The pinball loss of slope `b` with its best intercept (the q quantile of y − b·x). */
function lossAt(points: readonly Point[], b: number, q: number, r: Float64Array): number {
  for (let i = 0; i < points.length; i++) {
    const p = points[i] as Point
    r[i] = p.y - b * p.x
  }
  const sorted = r.slice().sort()
  const a = sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] as number
  let sum = 0
  for (const v of r) sum += v >= a ? q * (v - a) : (q - 1) * (v - a)
  return sum
}
