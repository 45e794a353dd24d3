import { describe, expect, it } from 'vitest'
import { loadProfile } from '../../src/sim/profile-loader.js'
import { engineWorkMsPerS, heldCapacity, saturation } from '../admission-capacity.js'
import { loadBenchFile, workloadSpec } from '../admission-config.js'
import { leftoverForBatch } from '../admission-report.js'

describe('engine work of a class (the capacity interactive leaves to batch)', () => {
  const profile = loadProfile('llama-3.1-8b-h100')
  const spec = workloadSpec(loadBenchFile('config/workloads/admission.yaml'))

  it('at saturation fits in the engine time and covers all of it but the per-step base', () => {
    for (const cls of ['interactive', 'batch'] as const) {
      const sat = saturation(profile, spec, cls, 3000)
      const work = engineWorkMsPerS(profile.stepTime, sat)
      // 3000: the bench's backlog (a short one does not reach steady state between the 20th and
      // 80th percentile of completions). A saturated engine runs 1000 ms of steps per second, and
      // its large batches leave the per-step base a few %.
      expect(work).toBeGreaterThan(850)
      expect(work).toBeLessThan(1000)
    }
  })

  it('counts decode work, not only prompts', () => {
    const m = profile.stepTime
    const prefillOnly = engineWorkMsPerS(m, { promptTokS: 1000, decodeTokS: 0, decodeContextTokS: 0 })
    expect(prefillOnly).toBeCloseTo(1000 * (m.perPrefillTokenMs + m.perContextTokenMs))
    const withDecode = engineWorkMsPerS(m, { promptTokS: 1000, decodeTokS: 100, decodeContextTokS: 150_000 })
    expect(withDecode - prefillOnly).toBeCloseTo(100 * m.perDecodeSeqMs + 150_000 * m.perContextTokenMs)
  })
})

describe('the capacity interactive leaves to batch, in both readings', () => {
  // A round engine: 10 ms base, 1 ms per prompt token, nothing else; batch saturation runs
  // 100 ms steps and 1000 output tok/s; interactive saturation is 900 prompt tok/s of work.
  const stepTime = { baseMs: 10, perPrefillTokenMs: 1, perDecodeSeqMs: 0, perContextTokenMs: 0 }
  const sat = (promptTokS: number, outputTokensPerS: number, stepMs: number) => ({
    promptTokS,
    decodeTokS: 0,
    decodeContextTokS: 0,
    stepMs,
    requestsPerS: 1,
    outputTokensPerS,
  })
  const cap = {
    interactiveRps: 10,
    interactiveSat: sat(900, 500, 100),
    batchSat: sat(900, 1000, 100),
    stepTime,
    tpotObjectiveMs: 50,
  }
  const interactive = (promptTokS: number) => ({ promptTokS, decodeTokS: 0, decodeContextTokS: 0 })

  it('by engine work: held capacity less the work interactive took', () => {
    // held = (1 - 10/50) / (1 - 10/100) = 0.8 / 0.9
    const held = 0.8 / 0.9
    expect(heldCapacity(cap)).toBeCloseTo(held)
    const left = leftoverForBatch(interactive(270), 0.5, cap) // 30% of interactive saturation's work
    expect(left.used).toBeCloseTo(0.3)
    expect(left.tokS).toBeCloseTo((held - 0.3) * 1000)
    expect(left.fcfsTokS).toBeCloseTo(700)
    // interactive working past the held capacity leaves nothing
    expect(leftoverForBatch(interactive(900), 4, cap).tokS).toBe(0)
  })

  it('by load level: 1 − L of the held capacity, nothing from 1× on', () => {
    const held = 0.8 / 0.9
    expect(leftoverForBatch(interactive(270), 0.5, cap).byLevelTokS).toBeCloseTo(0.5 * held * 1000)
    expect(leftoverForBatch(interactive(270), 1, cap).byLevelTokS).toBe(0)
    expect(leftoverForBatch(interactive(270), 2, cap).byLevelTokS).toBe(0)
  })
})
