/**
 * `slo-gateway bench --sweep` and `--find-max-goodput` as users run them, in their own process,
 * against `slo-gateway sim` (time-scaled 10x, so its capacity is a few requests/s and the
 * client stays light), with a small interactive workload and levels of a few seconds.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CliProcess, runCli } from '../helpers/cli.js'

const dir = mkdtempSync(join(tmpdir(), 'bench-sweep-e2e-'))
const WORKLOAD = join(dir, 'tiny.yaml')
writeFileSync(
  WORKLOAD,
  [
    'seed: 7',
    'arrival: { process: poisson }',
    'ignore_eos: true',
    'classes:',
    '  - name: interactive',
    '    priority: interactive',
    '    prompt_tokens: { dist: uniform, min: 100, max: 400 }',
    '    output_tokens: { dist: uniform, min: 4, max: 8 }',
    '    slo: { ttft_ms: 1000, tpot_ms: 150 }',
    '',
  ].join('\n'),
)

let sim: CliProcess
let simUrl: string

beforeAll(async () => {
  sim = runCli(['sim', '--port', '0', '--time-scale', '10'])
  for (let i = 0; i < 200 && !/listening on (\S+)/.test(sim.stdout); i++)
    await new Promise((r) => setTimeout(r, 50))
  simUrl = /listening on (\S+)/.exec(sim.stdout)![1]!
}, 30_000)

afterAll(async () => {
  if (sim.child.exitCode === null) {
    sim.child.kill('SIGTERM')
    await sim.exited
  }
  rmSync(dir, { recursive: true, force: true })
})

interface Level {
  rate: number
  multiple?: number
  attainment: number
  goodputRps: number
  summary: { classes: { class: string; offered: number; good: number }[] }
  requests: unknown[]
}

interface CurveJson {
  kind: 'sweep' | 'find'
  capacity?: { rps: number; source: string; probe?: { steps: { concurrency: number }[]; capacity: number } }
  search?: { rate: number; targetAttainment: number; stop: string; failRate?: number }
  levels: Level[]
}

async function bench(args: string[], out: string) {
  const p = runCli(['bench', '--target', simUrl, '--workload', WORKLOAD, '--out', out, ...args])
  const code = await p.exited
  expect(code, p.stderr).toBe(0)
  const files = ['bench.json', 'summary.md', 'goodput-vs-load.svg', 'attainment-vs-load.svg', 'ttft-cdf.svg']
  for (const f of files) expect(existsSync(join(out, f)), f).toBe(true)
  const read = (f: string) => readFileSync(join(out, f), 'utf8')
  return {
    p,
    json: JSON.parse(read('bench.json')) as CurveJson,
    md: read('summary.md'),
    goodputSvg: read('goodput-vs-load.svg'),
    attainmentSvg: read('attainment-vs-load.svg'),
  }
}

describe('slo-gateway bench load curves', () => {
  it('--sweep without --capacity measures the capacity first (closed-loop ramp), then runs one level per multiple', async () => {
    const { p, json, md, goodputSvg, attainmentSvg } = await bench(
      ['--sweep', '0.5,2', '--probe-duration', '1', '--duration', '2'],
      join(dir, 'sweep'),
    )
    expect(json.kind).toBe('sweep')
    expect(json.capacity?.source).toBe('measured')
    const steps = json.capacity?.probe?.steps ?? []
    expect(steps.length).toBeGreaterThanOrEqual(2)
    expect(steps.map((s) => s.concurrency).slice(0, 3)).toEqual([1, 2, 4].slice(0, steps.length))
    const cap = json.capacity!.rps
    expect(cap).toBeGreaterThan(0)
    expect(json.levels.map((l) => l.multiple)).toEqual([0.5, 2])
    // the rates are multiples of the unrounded capacity; the report rounds both to 3 decimals
    for (const [i, l] of json.levels.entries()) expect(l.rate).toBeCloseTo([0.5, 2][i]! * cap, 2)
    for (const l of json.levels) {
      expect(l.requests.length).toBe(l.summary.classes[0]!.offered)
      expect(l.requests.length).toBeGreaterThan(0)
    }
    // twice the saturation throughput, offered in an open loop, keeps fewer within SLO than half of it
    expect(json.levels[0]!.attainment).toBeGreaterThan(json.levels[1]!.attainment)
    expect(md).toContain('## Capacity (closed-loop ramp)')
    expect(md).toMatch(/\| 0\.5x \| [\d.]+ \| interactive \|/)
    expect(md).toMatch(/\| 2x \| [\d.]+ \| interactive \|/)
    expect(md).toContain('## Level 0.5x:')
    expect(md).toContain('## Level 2x:')
    expect(goodputSvg.match(/<circle /g)).toHaveLength(2)
    expect(attainmentSvg.match(/<circle /g)).toHaveLength(2)
    expect(p.stderr).toMatch(/capacity: concurrency 1: [\d.]+ ok req\/s/)
    expect(p.stderr).toMatch(/sweep: level 2\/2: 2x = [\d.]+ req\/s/)
  }, 150_000)

  it('--find-max-goodput: a line per trial; the answer is the highest rate tried whose attainment met the target', async () => {
    const { p, json, md, attainmentSvg } = await bench(
      ['--find-max-goodput', '--capacity', '8', '--duration', '2', '--max-trials', '3', '--tolerance', '0.3'],
      join(dir, 'find'),
    )
    expect(json.kind).toBe('find')
    const s = json.search!
    expect(s.targetAttainment).toBe(0.9)
    expect(json.levels.length).toBeGreaterThanOrEqual(1)
    expect(json.levels.length).toBeLessThanOrEqual(3)
    expect(json.levels[0]!.rate).toBe(4) // half of --capacity
    const passed = json.levels.filter((l) => l.attainment >= 0.9).map((l) => l.rate)
    expect(s.rate).toBe(passed.length === 0 ? 0 : Math.max(...passed))
    const missed = json.levels.filter((l) => !(l.attainment >= 0.9)).map((l) => l.rate)
    if (missed.length > 0) expect(s.failRate).toBe(Math.min(...missed))
    expect(p.stderr.match(/^find-max-goodput: trial \d+: /gm)).toHaveLength(json.levels.length)
    expect(md).toMatch(/\*\*(Max goodput: [\d.]+ req\/s offered|No rate kept 90\.0%)\*\*/)
    expect(attainmentSvg).toContain('target 90%')
  }, 90_000)

  it('mistakes: a usage error exits 2, a class the workload lacks exits 1', async () => {
    const run = async (args: string[]) => {
      const p = runCli(['bench', '--target', simUrl, '--workload', WORKLOAD, ...args])
      return { code: await p.exited, err: p.stderr }
    }
    const [bad, rate, lone, share, cls] = await Promise.all([
      run(['--sweep', '1,x']),
      run(['--sweep', '1,2', '--rate', '3']),
      run(['--rate', '1', '--attainment', '0.9']),
      run(['--find-max-goodput', '--attainment', '90']),
      run(['--find-max-goodput', '--capacity', '4', '--slo-class', 'batch']),
    ])
    expect(bad.code).toBe(2)
    expect(bad.err).toContain(
      "--sweep: expected multiples > 0 separated by commas (e.g. 0.5,1,2,4), got '1,x'",
    )
    expect(rate.code).toBe(2)
    expect(rate.err).toContain('it takes no --rate')
    expect(lone.code).toBe(2)
    expect(lone.err).toContain('--attainment goes with --sweep or --find-max-goodput')
    expect(share.code).toBe(2)
    expect(share.err).toContain("--attainment: expected a share in (0, 1], got '90'")
    expect(cls.code).toBe(1)
    expect(cls.err).toContain("--slo-class: the workload has no class 'batch' (it has interactive)")
  }, 90_000)
})
