import { describe, expect, it } from 'vitest'
import { Picker } from '../../../src/backends/picker.js'
import { kvTerm, leastWaitScorer } from '../../../src/backends/scorer.js'
import type { EffectiveLoad, EndpointScorer, EndpointView } from '../../../src/backends/types.js'

const view = (
  name: string,
  e: Partial<EffectiveLoad> = {},
  capacity: EndpointView['capacity'] = {},
): EndpointView => ({
  name,
  pool: 'p',
  effective: { waiting: 0, running: 0, inflightRequests: 0, inflightTokens: 0, fresh: true, ...e },
  capacity,
})

describe('leastWaitScorer', () => {
  it('ranks a queue above a busy batch above an idle endpoint', () => {
    const idle = leastWaitScorer.score(view('a'), 100)
    const busy = leastWaitScorer.score(view('b', { running: 16 }, { maxNumSeqs: 16 }), 100)
    const queued = leastWaitScorer.score(view('c', { waiting: 3 }), 100)
    expect(idle).toBe(0)
    expect(busy).toBe(1)
    expect(queued).toBe(3)
  })

  it('counts KV headroom including the request itself, steeply near full', () => {
    const roomy = leastWaitScorer.score(view('a', { kvUsage: 0.3, kvCapacityTokens: 10_000 }), 1000)
    const tight = leastWaitScorer.score(view('b', { kvUsage: 0.85, kvCapacityTokens: 10_000 }), 1000)
    expect(roomy).toBeCloseTo(kvTerm(0.4), 10)
    expect(tight).toBeCloseTo(kvTerm(0.95), 10)
    expect(tight).toBeGreaterThan(5)
    expect(kvTerm(0)).toBe(0)
    expect(kvTerm(1)).toBeCloseTo(25.5, 10)
  })

  it('uses in-flight tokens when KV is unknown', () => {
    expect(leastWaitScorer.score(view('a', { inflightTokens: 32_768 }), 10)).toBe(1)
  })
})

describe('Picker', () => {
  it('picks the lowest score', () => {
    const p = new Picker(leastWaitScorer)
    const views = [
      view('a', { waiting: 2 }),
      view('b', { waiting: 0, running: 3 }),
      view('c', { waiting: 1 }),
    ]
    expect(p.pick(views, 1)).toBe(1)
  })

  it('spreads ties round robin', () => {
    const p = new Picker(leastWaitScorer)
    const views = [view('a'), view('b'), view('c')]
    const picks = Array.from({ length: 6 }, () => p.pick(views, 1))
    expect(new Set(picks)).toEqual(new Set([0, 1, 2]))
    expect(picks.filter((i) => i === 0)).toHaveLength(2)
  })

  it('refuses when every score is Infinity; survives a scorer that breaks its contract', () => {
    const never: EndpointScorer = { name: 'never', score: () => Number.POSITIVE_INFINITY }
    expect(new Picker(never).pick([view('a')], 1)).toBe(-1)
    const broken: EndpointScorer = {
      name: 'broken',
      score: (v) => {
        if (v.name === 'a') throw new Error('boom')
        return v.name === 'b' ? Number.NaN : 2
      },
    }
    expect(new Picker(broken).pick([view('a'), view('b'), view('c')], 1)).toBe(2)
    expect(new Picker(leastWaitScorer).pick([], 1)).toBe(-1)
  })

  it('takes a new scorer (admission plugs its own in)', () => {
    const p = new Picker(leastWaitScorer)
    p.setScorer({ name: 'prefer-c', score: (v) => (v.name === 'c' ? 0 : 1) })
    expect(p.scorerName).toBe('prefer-c')
    expect(p.pick([view('a'), view('b'), view('c')], 1)).toBe(2)
  })
})
