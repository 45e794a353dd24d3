/**
 * Recursive least squares with exponential forgetting, weights kept non-negative: fits y ≈ w·x online, one
 * observation at a time, in O(k²) for k features (k = 3 here), no history kept.
 * Forgetting (lambda < 1) lets the fit follow a server whose speed changes.
 */
export class Rls {
  readonly k: number
  readonly w: number[]
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
    this.lambda = lambda
    const s = (i: number) => (typeof spread === 'number' ? spread : (spread[i] as number))
    this.p = initial.map((_, i) => initial.map((_, j) => (i === j ? s(i) ** 2 : 0)))
  }

  predict(x: readonly number[]): number {
    let y = 0
    for (let i = 0; i < this.k; i++) y += (this.w[i] as number) * (x[i] as number)
    return y
  }

  update(x: readonly number[], y: number): void {
    const k = this.k
    const px = new Array<number>(k).fill(0)
    for (let i = 0; i < k; i++) {
      const row = this.p[i] as number[]
      let s = 0
      for (let j = 0; j < k; j++) s += (row[j] as number) * (x[j] as number)
      px[i] = s
    }
    let denom = this.lambda
    for (let i = 0; i < k; i++) denom += (x[i] as number) * (px[i] as number)
    const err = y - this.predict(x)
    for (let i = 0; i < k; i++) {
      // Projected onto w >= 0: every term of the TTFT model is a cost, and a negative weight
      // (nearly collinear features fitted by least squares) predicts nonsense elsewhere.
      this.w[i] = Math.max(0, (this.w[i] as number) + ((px[i] as number) / denom) * err)
    }
    for (let i = 0; i < k; i++) {
      const row = this.p[i] as number[]
      for (let j = 0; j < k; j++) {
        row[j] = ((row[j] as number) - ((px[i] as number) * (px[j] as number)) / denom) / this.lambda
      }
    }
  }
}
