import { describe, expect, it } from 'vitest'
import { MissMargin } from '../../../src/admission/margin.js'

describe('MissMargin', () => {
  it('stays at the configured margin while admitted requests meet their objective', () => {
    const m = new MissMargin(0.1, 0.005)
    for (let i = 0; i < 1000; i++) m.observe(false)
    expect(m.value).toBe(0.1)
  })

  it('widens on misses, narrows back, and settles the miss rate near its target', () => {
    const m = new MissMargin(0.1, 0.01)
    m.observe(true)
    expect(m.value).toBeCloseTo(0.1 + 0.02 * 0.99, 9)
    for (let i = 0; i < 50; i++) m.observe(false)
    expect(m.value).toBeCloseTo(0.1 + 0.02 * 0.99 - 50 * 0.02 * 0.01, 9)
    for (let i = 0; i < 50; i++) m.observe(false)
    expect(m.value).toBe(0.1)
    // a process whose miss probability falls as the margin grows: p = 0.3 - margin
    let seed = 3
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    let misses = 0
    const n = 200_000
    for (let i = 0; i < n; i++) {
      const missed = rnd() < Math.max(0, 0.3 - m.value)
      if (missed) misses++
      m.observe(missed)
    }
    expect(misses / n).toBeGreaterThan(0.007)
    expect(misses / n).toBeLessThan(0.013)
    expect(m.value).toBeGreaterThan(0.24) // 0.29 on average, a miss moves it 0.02
  })

  it('never passes 0.5, and a target of 0 keeps the margin fixed', () => {
    const m = new MissMargin(0.1, 0.005)
    for (let i = 0; i < 100; i++) m.observe(true)
    expect(m.value).toBeCloseTo(0.5, 9)
    const fixed = new MissMargin(0.2, 0)
    for (let i = 0; i < 100; i++) fixed.observe(true)
    expect(fixed.value).toBe(0.2)
  })
})
