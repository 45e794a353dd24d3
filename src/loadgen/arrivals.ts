/**
 * Arrival processes of an open loop, as vLLM's `bench serve` draws them: the gaps between
 * requests are exponential (Poisson arrivals) or gamma with shape = burstiness and the same
 * mean, so the coefficient of variation is 1/sqrt(burstiness): burstiness < 1 is burstier
 * than Poisson, > 1 more even, 1 is Poisson. Seeded, so a run repeats.
 */
import type { Rng } from '../sim/rng.js'

/** Draws from Gamma(shape, scale) (Marsaglia and Tsang; shape < 1 by the boost U^(1/shape)). */
export function gammaDraw(rng: Rng, shape: number, scale: number): number {
  if (shape < 1) return gammaDraw(rng, shape + 1, scale) * (1 - rng.next()) ** (1 / shape)
  const d = shape - 1 / 3
  const c = 1 / Math.sqrt(9 * d)
  for (;;) {
    let x: number
    let v: number
    do {
      x = rng.normal()
      v = 1 + c * x
    } while (v <= 0)
    v = v * v * v
    const u = 1 - rng.next()
    if (u < 1 - 0.0331 * x ** 4) return d * v * scale
    if (Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v * scale
  }
}

export interface ArrivalSpec {
  readonly process: 'poisson' | 'gamma'
  /** Gamma's shape; ignored for poisson. */
  readonly burstiness: number
}

/** The gap before each next arrival, in ms, at `ratePerS` requests per second on average. */
export function arrivalGaps(spec: ArrivalSpec, ratePerS: number, rng: Rng): () => number {
  const meanMs = 1000 / ratePerS
  if (spec.process === 'poisson') return () => rng.exponential(meanMs)
  const shape = spec.burstiness
  const scale = meanMs / shape
  return () => gammaDraw(rng, shape, scale)
}
