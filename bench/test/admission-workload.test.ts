import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { chatPromptTokens } from '../../src/sim/index.js'
import { Rng } from '../../src/sim/rng.js'
import { BenchConfigError, parseBenchFile, workloadSpec } from '../admission-config.js'
import {
  classArrivals,
  classSequence,
  drawLength,
  type LognormalComponent,
  lognormalParams,
  mergedArrivals,
  promptText,
  type WorkloadSpec,
} from '../admission-workload.js'
import { gapStats } from './gap-stats.js'

const spec: WorkloadSpec = {
  seed: 7,
  interactive: {
    prompt: [
      { weight: 3, median: 400, sigma: 0.8, min: 16, max: 4000 },
      { weight: 1, median: 2500, sigma: 0.5, min: 500, max: 8000 },
    ],
    output: [{ weight: 1, median: 100, sigma: 0.7, min: 4, max: 400 }],
  },
  batch: {
    prompt: [{ weight: 1, median: 1200, sigma: 0.6, min: 64, max: 6000 }],
    output: [{ weight: 1, median: 200, sigma: 0.5, min: 16, max: 600 }],
  },
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

describe('seeded workload', () => {
  it('is the same for the same seed and differs for another', () => {
    const a = mergedArrivals(spec, { interactive: 10, batch: 5 }, 30_000)
    const b = mergedArrivals(spec, { interactive: 10, batch: 5 }, 30_000)
    const c = mergedArrivals({ ...spec, seed: 8 }, { interactive: 10, batch: 5 }, 30_000)
    expect(a).toEqual(b)
    expect(a.length).toBeGreaterThan(300)
    expect(c.map((x) => x.promptTokens)).not.toEqual(a.map((x) => x.promptTokens))
  })

  it('offers the same sequence at every level: request k keeps its lengths, its time is divided by the rate', () => {
    const one = classArrivals(spec, 'interactive', 1, 100_000)
    const four = classArrivals(spec, 'interactive', 4, 100_000)
    expect(four.length).toBeGreaterThan(3 * one.length)
    for (const [k, a] of one.entries()) {
      const b = four[k]
      expect(b?.promptTokens).toBe(a.promptTokens)
      expect(b?.outputTokens).toBe(a.outputTokens)
      expect(b?.atMs).toBeCloseTo(a.atMs / 4, 6)
    }
  })

  it('draws the two classes from independent streams (adding batch does not change interactive)', () => {
    const alone = mergedArrivals(spec, { interactive: 10, batch: 0 }, 20_000)
    const both = mergedArrivals(spec, { interactive: 10, batch: 20 }, 20_000)
    expect(both.filter((a) => a.cls === 'interactive')).toEqual(alone)
  })

  it('has Poisson arrivals: mean gap 1/rate, exponential (coefficient of variation ~1)', () => {
    const seq = classSequence(spec, 'batch', 20_000)
    const { mean, cv } = gapStats(seq)
    expect(mean).toBeGreaterThan(970)
    expect(mean).toBeLessThan(1030)
    expect(cv).toBeGreaterThan(0.95)
    expect(cv).toBeLessThan(1.05)
    const n = classArrivals(spec, 'batch', 50, 60_000).length
    expect(n).toBeGreaterThan(3000 - 4 * Math.sqrt(3000))
    expect(n).toBeLessThan(3000 + 4 * Math.sqrt(3000))
  })
})

describe('lognormal mix', () => {
  it('derives μ = ln(median) and mean = e^(μ + σ²/2)', () => {
    const p = lognormalParams({ weight: 1, median: 100, sigma: 0.5, min: 1, max: 1e9 })
    expect(p.mu).toBeCloseTo(Math.log(100), 12)
    expect(p.sigma).toBe(0.5)
    expect(p.mean).toBeCloseTo(100 * Math.exp(0.125), 9)
  })

  it('draws with the configured median and σ (unclamped)', () => {
    const c: LognormalComponent = { weight: 1, median: 300, sigma: 0.6, min: 1, max: 1e9 }
    const rng = new Rng(3)
    const xs = Array.from({ length: 40_000 }, () => drawLength([c], rng))
    expect(median(xs) / 300).toBeGreaterThan(0.97)
    expect(median(xs) / 300).toBeLessThan(1.03)
    const logs = xs.map(Math.log)
    const mu = logs.reduce((a, b) => a + b, 0) / logs.length
    const sd = Math.sqrt(logs.reduce((a, b) => a + (b - mu) ** 2, 0) / logs.length)
    expect(mu).toBeCloseTo(Math.log(300), 1)
    expect(sd).toBeGreaterThan(0.58)
    expect(sd).toBeLessThan(0.62)
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length
    expect(mean / lognormalParams(c).mean).toBeGreaterThan(0.97)
    expect(mean / lognormalParams(c).mean).toBeLessThan(1.03)
  })

  it('picks components by weight and clamps to [min, max]', () => {
    const mix: LognormalComponent[] = [
      { weight: 3, median: 50, sigma: 0.3, min: 10, max: 200 },
      { weight: 1, median: 5000, sigma: 0.3, min: 1000, max: 20_000 },
    ]
    const rng = new Rng(5)
    const xs = Array.from({ length: 20_000 }, () => drawLength(mix, rng))
    const long = xs.filter((x) => x >= 1000).length / xs.length
    expect(long).toBeGreaterThan(0.23)
    expect(long).toBeLessThan(0.27)
    expect(xs.every((x) => (x >= 10 && x <= 200) || (x >= 1000 && x <= 20_000))).toBe(true)
    const clamped = drawLength([{ weight: 1, median: 1e6, sigma: 0, min: 1, max: 64 }], rng)
    expect(clamped).toBe(64)
  })
})

describe('prompt text', () => {
  it("is exactly the drawn number of tokens by the simulator's rule, and starts with its tag", () => {
    for (const tokens of [16, 17, 500, 2501, 8000]) {
      const text = promptText('run1-interactive-42', tokens)
      expect(chatPromptTokens(text.length, 1)).toBe(tokens)
      expect(text.startsWith('run1-interactive-42 ')).toBe(true)
    }
    // two requests differ in their first prefix-cache block (64 characters)
    expect(promptText('a-1', 500).slice(0, 64)).not.toBe(promptText('a-2', 500).slice(0, 64))
  })
})

describe('workload file', () => {
  it('parses the shipped config/workloads/admission.yaml', () => {
    const path = join(import.meta.dirname, '../../config/workloads/admission.yaml')
    const f = parseBenchFile(readFileSync(path, 'utf8'), path)
    expect(f.levels).toEqual([0.5, 1, 2, 4])
    const w = workloadSpec(f)
    expect(w.interactive.prompt.length).toBeGreaterThan(0)
    expect(w.batch.output.length).toBeGreaterThan(0)
  })

  it('names the file and the key path of a mistake', () => {
    const path = join(import.meta.dirname, '../../config/workloads/admission.yaml')
    const text = readFileSync(path, 'utf8').replace('time_scale: ', 'time_scale: -')
    expect(() => parseBenchFile(text, 'w.yaml')).toThrow(BenchConfigError)
    expect(() => parseBenchFile(text, 'w.yaml')).toThrow(/w\.yaml: time_scale:/)
  })
})
