import { describe, expect, it } from 'vitest'
import { cgroupCpus, gcFlagFor, usableCores } from '../../src/gc-tuning.js'

describe('gc tuning', () => {
  it('reads a cgroup v2 cpu.max quota, and none where it is unlimited or unreadable', () => {
    expect(cgroupCpus('50000 100000\n')).toBe(0.5)
    expect(cgroupCpus('200000 100000')).toBe(2)
    expect(cgroupCpus('max 100000\n')).toBeUndefined()
    expect(cgroupCpus(undefined)).toBeUndefined()
    expect(cgroupCpus('')).toBeUndefined()
    expect(cgroupCpus('garbage')).toBeUndefined()
  })

  it('counts the cores as the fewer of the affinity and the quota', () => {
    expect(usableCores(8, '100000 100000')).toBe(1)
    expect(usableCores(1, 'max 100000')).toBe(1)
    expect(usableCores(4, undefined)).toBe(4)
    expect(usableCores(2, '400000 100000')).toBe(2)
  })

  it('turns parallel scavenging off below two cores only', () => {
    expect(gcFlagFor(1, '')).toBe('--no-parallel-scavenge')
    expect(gcFlagFor(0.5, '')).toBe('--no-parallel-scavenge')
    expect(gcFlagFor(2, '')).toBeUndefined()
    expect(gcFlagFor(1.5, '')).toBe('--no-parallel-scavenge')
  })

  it("leaves the operator's own scavenge flag alone", () => {
    expect(gcFlagFor(1, '--max-old-space-size=512 --parallel-scavenge')).toBeUndefined()
    expect(gcFlagFor(1, '--no-parallel-scavenge')).toBeUndefined()
    expect(gcFlagFor(1, '--single-threaded-gc')).toBeUndefined()
    expect(gcFlagFor(1, '--max-semi-space-size=32')).toBe('--no-parallel-scavenge')
  })
})
