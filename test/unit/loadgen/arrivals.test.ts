import { describe, expect, it } from 'vitest'
import { arrivalGaps, gammaDraw } from '../../../src/loadgen/arrivals.js'
import { Rng } from '../../../src/sim/rng.js'

function meanAndCv(xs: readonly number[]): { mean: number; cv: number } {
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length
  const variance = xs.reduce((s, x) => s + (x - mean) ** 2, 0) / (xs.length - 1)
  return { mean, cv: Math.sqrt(variance) / mean }
}

const draws = (next: () => number, n = 10_000) => Array.from({ length: n }, next)

describe('arrival gaps over 10,000 draws', () => {
  it('poisson: mean 1/rate, coefficient of variation 1, within 5%', () => {
    const { mean, cv } = meanAndCv(draws(arrivalGaps({ process: 'poisson', burstiness: 1 }, 20, new Rng(7))))
    expect(mean).toBeGreaterThan(50 * 0.95)
    expect(mean).toBeLessThan(50 * 1.05)
    expect(cv).toBeGreaterThan(0.95)
    expect(cv).toBeLessThan(1.05)
  })

  for (const burstiness of [0.5, 1, 2, 4]) {
    it(`gamma, burstiness ${burstiness}: mean 1/rate, CV 1/sqrt(burstiness), within 5%`, () => {
      const gaps = arrivalGaps({ process: 'gamma', burstiness }, 8, new Rng(11))
      const { mean, cv } = meanAndCv(draws(gaps))
      const wantCv = 1 / Math.sqrt(burstiness)
      expect(Math.abs(mean - 125) / 125).toBeLessThan(0.05)
      expect(Math.abs(cv - wantCv) / wantCv).toBeLessThan(0.05)
    })
  }

  it('the same seed draws the same gaps; another seed others', () => {
    const a = draws(arrivalGaps({ process: 'gamma', burstiness: 0.5 }, 5, new Rng(3)), 20)
    const b = draws(arrivalGaps({ process: 'gamma', burstiness: 0.5 }, 5, new Rng(3)), 20)
    const c = draws(arrivalGaps({ process: 'gamma', burstiness: 0.5 }, 5, new Rng(4)), 20)
    expect(a).toEqual(b)
    expect(a).not.toEqual(c)
  })

  it('gamma draws are positive for a shape under 1 (the boost)', () => {
    const rng = new Rng(5)
    const xs = draws(() => gammaDraw(rng, 0.2, 1), 5000)
    expect(xs.every((x) => x >= 0 && Number.isFinite(x))).toBe(true)
    expect(Math.abs(meanAndCv(xs).mean - 0.2) / 0.2).toBeLessThan(0.1)
  })
})
