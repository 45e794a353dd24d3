import { describe, expect, it } from 'vitest'
import { engineWorkMsPerS, saturation } from '../../../src/bench/admission-capacity.js'
import { loadBenchFile, workloadSpec } from '../../../src/bench/admission-config.js'
import { loadProfile } from '../../../src/sim/profile-loader.js'

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
