/**
 * The TTFT margin of one class in one pool. Admission admits a request when its predicted
 * TTFT is within SLO × (1 − margin). The configured margin is the floor; every admitted
 * request that misses its TTFT objective widens the margin by STEP, every one that meets
 * it narrows it by STEP × target, so the share of admitted requests that miss settles near
 * `target` (an integral controller on the miss rate). An unbiased estimator errs both ways:
 * a fixed margin then lets the requests it under-predicts near the objective miss it,
 * more of them the busier the pool (admitted predictions crowd at the limit).
 */
const STEP = 0.02
const MAX = 0.5

export class TtftMargin {
  private readonly floor: number
  private readonly target: number
  private extra = 0

  /** `target` 0: the margin stays at `floor`. */
  constructor(floor: number, target: number) {
    this.floor = floor
    this.target = target
  }

  get value(): number {
    return this.floor + this.extra
  }

  /** An admitted request got its first token; `missed`: after its TTFT objective. */
  observe(missed: boolean): void {
    if (this.target <= 0) return
    const e = this.extra + STEP * ((missed ? 1 : 0) - this.target)
    this.extra = Math.min(Math.max(0, MAX - this.floor), Math.max(0, e))
  }
}
