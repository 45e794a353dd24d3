/**
 * The margin of one class's objective in one pool (its TTFT, or its TPOT). Admission admits
 * a request when its predicted TTFT is within SLO × (1 − margin); the decode guard lets a
 * class add to an endpoint's batch while its live inter-token latency is within the TPOT
 * objective × (1 − margin). The configured margin is the floor; every admitted request that
 * misses the objective widens the margin by STEP, every one that meets it narrows it by
 * STEP × target, so the share of admitted requests that miss settles near `target` (an
 * integral controller on the miss rate). An unbiased estimator errs both ways: a fixed
 * margin then lets the requests it under-predicts near the objective miss it, more of them
 * the busier the pool (admitted predictions crowd at the limit); and a request's TPOT is
 * the mean of the steps of its whole stream, which spread around the ITL the guard holds.
 */
const STEP = 0.02
const MAX = 0.5

export class MissMargin {
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

  /** An admitted request's outcome on the objective (its first token, or its stream's end); `missed`: beyond it. */
  observe(missed: boolean): void {
    if (this.target <= 0) return
    const e = this.extra + STEP * ((missed ? 1 : 0) - this.target)
    this.extra = Math.min(Math.max(0, MAX - this.floor), Math.max(0, e))
  }
}
