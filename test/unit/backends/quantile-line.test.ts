import { describe, expect, it } from 'vitest'
import { lowQuantile, type Point, quantileSlope } from '../../../src/backends/quantile-line.js'

/** A seeded generator (mulberry32), so the cases are the same every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function leastSquaresSlope(ps: readonly Point[]): number {
  const n = ps.length
  const mx = ps.reduce((s, p) => s + p.x, 0) / n
  const my = ps.reduce((s, p) => s + p.y, 0) / n
  let cov = 0
  let v = 0
  for (const p of ps) {
    cov += (p.x - mx) * (p.y - my)
    v += (p.x - mx) ** 2
  }
  return cov / v
}

describe('quantileSlope', () => {
  it('is exact on points on a line', () => {
    const ps = [100, 400, 900, 1600].map((x) => ({ x, y: 20 + 0.13 * x }))
    expect(quantileSlope(ps, 0.2)).toBeCloseTo(0.13, 10)
  })

  it('follows the undelayed points where least squares is tilted by one delay on a short prompt', () => {
    // 15 prompts of 200..3000 tokens, 0.13 ms a token, a few ms of jitter, and the first
    // (shortest) request 200 ms late: the cold-start case the integration test met
    const r = rng(7)
    const ps = Array.from({ length: 15 }, (_, i) => {
      const x = 200 + i * 200
      return { x, y: 20 + 0.13 * x + r() * 4 + (i === 0 ? 200 : 0) }
    })
    const ls = leastSquaresSlope(ps)
    expect(Math.abs(ls - 0.13) / 0.13).toBeGreaterThan(0.1)
    const q = quantileSlope(ps, 0.2) ?? 0
    expect(Math.abs(q - 0.13) / 0.13).toBeLessThan(0.03)
  })

  it('holds under one-sided heavy-tailed delays on a third of the points', () => {
    const r = rng(11)
    for (let trial = 0; trial < 20; trial++) {
      const ps = Array.from({ length: 30 }, (_, i) => {
        const x = 200 + ((i * 7) % 15) * 200
        const delay = r() < 0.33 ? 30 + r() * 300 : r() * 3
        return { x, y: 13 + 0.05 * x + delay }
      })
      expect(Math.abs((quantileSlope(ps, 0.2) ?? 0) - 0.05) / 0.05).toBeLessThan(0.1)
    }
  })

  it('says nothing without two distinct x, and refuses a q outside (0, 1)', () => {
    expect(quantileSlope([], 0.2)).toBeUndefined()
    expect(
      quantileSlope(
        [
          { x: 5, y: 1 },
          { x: 5, y: 2 },
        ],
        0.2,
      ),
    ).toBeUndefined()
    expect(() => quantileSlope([{ x: 1, y: 1 }], 0)).toThrow(/q must be in/)
    expect(() => quantileSlope([{ x: 1, y: 1 }], 1)).toThrow(/q must be in/)
  })
})

describe('lowQuantile', () => {
  it('is the ⌈q·n⌉-th smallest', () => {
    expect(lowQuantile([5, 1, 4, 2, 3], 0.2)).toBe(1)
    expect(lowQuantile([5, 1, 4, 2, 3], 0.5)).toBe(3)
    expect(lowQuantile([5, 1, 4, 2, 3], 0.99)).toBe(5)
    expect(lowQuantile([], 0.5)).toBeUndefined()
  })
})
