import { describe, expect, it } from 'vitest'
import { Rls } from '../../../src/admission/rls.js'

describe('Rls', () => {
  it('learns the weights of a noiseless linear relation from a wrong prior', () => {
    const rls = new Rls([0, 0, 0])
    const truth = [8, 0.03, 0.2]
    let seed = 7
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    for (let i = 0; i < 500; i++) {
      const x = [1, rnd() * 8000, rnd() * 200]
      rls.update(x, truth[0]! * x[0]! + truth[1]! * x[1]! + truth[2]! * x[2]!)
    }
    expect(rls.w[0]).toBeCloseTo(8, 1)
    expect(rls.w[1]).toBeCloseTo(0.03, 4)
    expect(rls.w[2]).toBeCloseTo(0.2, 3)
  })

  it('follows a change of speed (forgetting)', () => {
    const rls = new Rls([1, 0.01], 0.98)
    for (let i = 0; i < 300; i++) rls.update([1, (i % 10) * 100], 5 + 0.02 * (i % 10) * 100)
    for (let i = 0; i < 300; i++) rls.update([1, (i % 10) * 100], 5 + 0.04 * (i % 10) * 100)
    expect(rls.w[1]).toBeCloseTo(0.04, 3)
  })
})
