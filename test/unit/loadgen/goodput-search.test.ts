/**
 * The search for the highest rate within SLO and the capacity ramp, against fake targets
 * whose attainment (or throughput) is a known function of the load: deterministic, no I/O.
 */
import { describe, expect, it } from 'vitest'
import { rampCapacity } from '../../../src/loadgen/capacity-probe.js'
import { searchMaxRate } from '../../../src/loadgen/goodput-search.js'

/** A target that keeps every request within SLO up to `knee` req/s, then loses them linearly. */
const kneeAt = (knee: number) => async (rate: number) => ({
  attainment: rate <= knee ? 1 : Math.max(0, 1 - (rate - knee) / knee),
})

describe('searchMaxRate', () => {
  it('brackets by doubling, then bisects to the tolerance: the answer passes and lies within it of the true edge', async () => {
    // attainment >= 0.9 up to 10 * 1.1 = 11 req/s
    const res = await searchMaxRate(kneeAt(10), { start: 2, attainment: 0.9, tolerance: 0.05, maxTrials: 20 })
    expect(res.stop).toBe('converged')
    expect(res.rate).toBeLessThanOrEqual(11)
    expect(res.rate).toBeGreaterThanOrEqual(11 * 0.95)
    expect(res.failRate).toBeGreaterThan(11)
    expect((res.failRate! - res.rate) / res.failRate!).toBeLessThanOrEqual(0.05)
    // doubling first: 2, 4, 8, 16 (the first miss), then bisection inside [8, 16]
    expect(res.trials.slice(0, 4).map((t) => t.rate)).toEqual([2, 4, 8, 16])
    expect(res.trials.slice(0, 4).map((t) => t.pass)).toEqual([true, true, true, false])
    expect(res.trials[4]!.rate).toBe(12)
    for (const t of res.trials.slice(4)) {
      expect(t.rate).toBeGreaterThan(8)
      expect(t.rate).toBeLessThan(16)
    }
    expect(res.best?.rate).toBe(res.rate)
    expect(res.best?.pass).toBe(true)
  })

  it('halves from a first rate that misses', async () => {
    const res = await searchMaxRate(kneeAt(1), { start: 16, attainment: 0.9, tolerance: 0.1, maxTrials: 20 })
    expect(res.trials.slice(0, 4).map((t) => t.rate)).toEqual([16, 8, 4, 2])
    expect(res.trials[4]).toMatchObject({ rate: 1, pass: true })
    expect(res.rate).toBeGreaterThanOrEqual(1.1 * 0.9)
    expect(res.rate).toBeLessThanOrEqual(1.1)
    expect(res.stop).toBe('converged')
  })

  it('the trial limit stops it with the best rate so far; a ramp that never missed has no fail rate', async () => {
    const res = await searchMaxRate(kneeAt(1000), { start: 1, attainment: 0.9, maxTrials: 3 })
    expect(res).toMatchObject({ rate: 4, stop: 'max-trials', failRate: undefined })
    expect(res.trials).toHaveLength(3)
  })

  it('nothing passes down to minRate: rate 0, none-passed', async () => {
    const never = async () => ({ attainment: 0.5 })
    const res = await searchMaxRate(never, { start: 8, attainment: 0.9, minRate: 1, maxTrials: 50 })
    expect(res.trials.map((t) => t.rate)).toEqual([8, 4, 2, 1])
    expect(res).toMatchObject({ rate: 0, best: undefined, stop: 'none-passed', failRate: 1 })
  })

  it('a NaN attainment (nothing offered) is a miss; the exact target passes', async () => {
    const res = await searchMaxRate(async (r) => ({ attainment: r <= 3 ? 0.9 : Number.NaN }), {
      start: 3,
      attainment: 0.9,
      tolerance: 0.5,
    })
    expect(res.trials.map((t) => [t.rate, t.pass])).toEqual([
      [3, true],
      [6, false],
    ])
    expect(res.rate).toBe(3)
  })

  it('tells each trial with the bracket as it stands', async () => {
    const seen: [number, number | undefined, number | undefined][] = []
    await searchMaxRate(kneeAt(10), {
      start: 8,
      attainment: 0.9,
      tolerance: 0.3,
      onTrial: (t, s) => seen.push([t.rate, s.pass, s.fail]),
    })
    expect(seen).toEqual([
      [8, 8, undefined],
      [16, 8, 16],
      [12, 8, 12],
      [10, 10, 12],
    ])
  })

  it('brackets by a smaller step from a start close to the edge, in fewer trials', async () => {
    // edge at 11 req/s; from 10 by 1.15: 10 passes, 11.5 misses, then bisection inside [10, 11.5]
    const res = await searchMaxRate(kneeAt(10), { start: 10, attainment: 0.9, step: 1.15, tolerance: 0.05 })
    expect(res.trials.slice(0, 2).map((t) => [t.rate, t.pass])).toEqual([
      [10, true],
      [11.5, false],
    ])
    // 10.75 passes, 11.125 misses (past the edge at 11): within 5%, in four trials
    expect(res.trials.map((t) => t.rate)).toEqual([10, 11.5, 10.75, 11.125])
    expect(res).toMatchObject({ rate: 10.75, failRate: 11.125, stop: 'converged' })
    const down = await searchMaxRate(kneeAt(10), {
      start: 13.225,
      attainment: 0.9,
      step: 1.15,
      tolerance: 0.2,
    })
    expect(down.trials.map((t) => [Number(t.rate.toFixed(3)), t.pass])).toEqual([
      [13.225, false],
      [11.5, false],
      [10, true],
    ])
  })

  it('refuses bad options', async () => {
    const t = kneeAt(1)
    await expect(searchMaxRate(t, { start: 0, attainment: 0.9 })).rejects.toThrow(
      'start: expected a rate > 0',
    )
    await expect(searchMaxRate(t, { start: 1, attainment: 1.5 })).rejects.toThrow(
      'attainment: expected a share',
    )
    await expect(searchMaxRate(t, { start: 1, attainment: 0.9, maxTrials: 0 })).rejects.toThrow('maxTrials')
    await expect(searchMaxRate(t, { start: 1, attainment: 0.9, step: 1 })).rejects.toThrow(
      'step: expected a factor > 1',
    )
  })
})

describe('rampCapacity', () => {
  /** Throughput that grows with concurrency until `max` (a server's batch limit). */
  const saturating =
    (max: number, refusedFrom = Number.POSITIVE_INFINITY) =>
    async (c: number) => ({
      concurrency: c,
      throughput: Math.min(c, max) * 2,
      refusedShare: c >= refusedFrom ? 0.5 : 0,
    })

  it('doubles concurrency until a step gains < 10%; the capacity is the best step', async () => {
    const res = await rampCapacity(saturating(16))
    expect(res.steps.map((s) => s.concurrency)).toEqual([1, 2, 4, 8, 16, 32])
    expect(res).toMatchObject({ capacity: 32, concurrency: 16, stop: 'plateau' })
  })

  it('stops where the target starts refusing', async () => {
    const res = await rampCapacity(saturating(1000, 8))
    expect(res.steps.map((s) => s.concurrency)).toEqual([1, 2, 4, 8])
    expect(res).toMatchObject({ capacity: 16, concurrency: 8, stop: 'refusing' })
  })

  it('stops at maxConcurrency', async () => {
    const res = await rampCapacity(saturating(1e6), { maxConcurrency: 4 })
    expect(res).toMatchObject({ capacity: 8, concurrency: 4, stop: 'max-concurrency' })
  })
})
