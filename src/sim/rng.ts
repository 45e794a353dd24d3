/**
 * Seeded pseudo-random numbers (mulberry32): small, fast and deterministic, so a simulator run is
 * reproducible under `--seed`. Not for anything that needs real randomness.
 */
export class Rng {
  private state: number
  private spare: number | undefined

  constructor(seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  /** Standard normal (Box-Muller, caching the second value). */
  normal(): number {
    if (this.spare !== undefined) {
      const s = this.spare
      this.spare = undefined
      return s
    }
    let u = 0
    while (u === 0) u = this.next()
    const v = this.next()
    const r = Math.sqrt(-2 * Math.log(u))
    this.spare = r * Math.sin(2 * Math.PI * v)
    return r * Math.cos(2 * Math.PI * v)
  }

  /** Exponential with the given mean (for Poisson inter-arrival times). */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean
  }
}

/** Derives an independent seed for a sub-stream (replica index, purpose). */
export function deriveSeed(seed: number, stream: number): number {
  let h = (seed ^ Math.imul(stream + 1, 0x85ebca6b)) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0
  return (h ^ (h >>> 16)) >>> 0
}
