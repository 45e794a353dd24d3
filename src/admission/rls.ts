/**
 * Recursive least squares with exponential forgetting: fits y ≈ w·x online, one
 * observation at a time, in O(k²) for k features (3 or 4 here), no history kept.
 * Forgetting (lambda < 1) lets the fit follow a server whose speed changes.
 *
 * Predictions use weights kept at 0 or above (every term of the TTFT model is a cost, and
 * a negative weight from nearly collinear features predicts nonsense elsewhere): the fit,
 * with each negative weight set to 0 and the others moved to where the fit's covariance
 * says they belong given that (a projection in its metric, so a constant and a step time
 * that moved together keep predicting what they predicted together). The fit itself stays
 * unconstrained: clamping inside it leaves the covariance believing a correction was made
 * that was not, and the other weights then run away to make up for it.
 */
/**
 * A fit seeded from priors (the engines' facts) is seeded again from new ones only while it
 * has fewer observations of its own than this (after that its fit knows better) ...
 */
export const RESEED_BELOW = 8

/** ... and only for a prior that moved by more than `fraction` of the one it had (relative). */
export function priorMoved(now: number, was: number, fraction = 0.05): boolean {
  return Math.abs(now - was) > fraction * was
}

export class Rls {
  readonly k: number
  /** The weights predictions use: the fit's, projected onto w >= 0. */
  readonly w: number[]
  private readonly raw: number[]
  private readonly p: number[][]
  private readonly lambda: number

  /**
   * `initial` weights are the prior (config hints); `spread` how far each may be from it, in
   * units of the observation noise: the prior covariance is diag(spread²). A spread
   * proportionate to each weight's scale keeps the first observations from throwing a
   * weight far off along a feature of large magnitude (one equation, k unknowns).
   */
  constructor(initial: readonly number[], lambda = 0.995, spread: number | readonly number[] = 30) {
    this.k = initial.length
    this.w = [...initial]
    this.raw = [...initial]
    this.lambda = lambda
    const s = (i: number) => (typeof spread === 'number' ? spread : spread[i]!)
    this.p = initial.map((_, i) => initial.map((_, j) => (i === j ? s(i) ** 2 : 0)))
  }

  predict(x: readonly number[]): number {
    let y = 0
    for (let i = 0; i < this.k; i++) y += this.w[i]! * x[i]!
    return y
  }

  update(x: readonly number[], y: number): void {
    const k = this.k
    const px = new Array<number>(k).fill(0)
    for (let i = 0; i < k; i++) {
      const row = this.p[i]!
      let s = 0
      for (let j = 0; j < k; j++) s += row[j]! * x[j]!
      px[i] = s
    }
    let denom = this.lambda
    for (let i = 0; i < k; i++) denom += x[i]! * px[i]!
    let fitted = 0
    for (let i = 0; i < k; i++) fitted += this.raw[i]! * x[i]!
    const err = y - fitted
    for (let i = 0; i < k; i++) this.raw[i] = this.raw[i]! + (px[i]! / denom) * err
    for (let i = 0; i < k; i++) {
      const row = this.p[i]!
      for (let j = 0; j < k; j++) {
        row[j] = (row[j]! - (px[i]! * px[j]!) / denom) / this.lambda
      }
    }
    this.project()
  }

  /** w = the fit with its negative weights moved to 0, one at a time, along the covariance. */
  private project(): void {
    const w = this.w
    for (let i = 0; i < this.k; i++) w[i] = this.raw[i]!
    for (let round = 0; round < this.k; round++) {
      let j = -1
      for (let i = 0; i < this.k; i++) if (w[i]! < 0 && (j < 0 || w[i]! < w[j]!)) j = i
      if (j < 0) return
      const pj = this.p[j]!
      const pjj = pj[j]!
      const wj = w[j]!
      for (let i = 0; i < this.k; i++) w[i] = w[i]! - (pj[i]! / pjj) * wj
      w[j] = 0
    }
    for (let i = 0; i < this.k; i++) w[i] = Math.max(0, w[i]!)
  }
}
