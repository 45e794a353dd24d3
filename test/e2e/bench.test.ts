/**
 * `slo-gateway bench` as users run it, in its own process: against the gateway as `npm start`
 * runs it (the embedded config: two simulated replicas, real time), and against
 * `slo-gateway sim` directly, with the shipped chat-plus-batch workload for a few seconds.
 * Each run writes bench.json, summary.md and ttft-cdf.svg.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BenchRecord } from '../../src/loadgen/bench-run.js'
import { type CliProcess, runCli } from '../helpers/cli.js'

const ROOT = join(import.meta.dirname, '..', '..')
const WORKLOAD = join(ROOT, 'config', 'workloads', 'chat-plus-batch.yaml')
const dir = mkdtempSync(join(tmpdir(), 'bench-e2e-'))
const RUN = ['--workload', WORKLOAD, '--rate', '5', '--duration', '3', '--seed', '3']

let gateway: CliProcess
let gatewayUrl: string
let sim: CliProcess
let simUrl: string

async function stop(p: CliProcess | undefined): Promise<void> {
  if (p === undefined || p.child.exitCode !== null) return
  p.child.kill('SIGTERM')
  await p.exited
}

beforeAll(async () => {
  gateway = runCli(['serve', '--port', '0', '--admin-port', '0', '--set', 'server.host=127.0.0.1'])
  const line = await gateway.waitForLog(
    (l) => typeof l.msg === 'string' && l.msg.startsWith('slo-gateway listening'),
  )
  gatewayUrl = `http://127.0.0.1:${line.port}`
  sim = runCli(['sim', '--port', '0'])
  for (let i = 0; i < 200 && !/listening on (\S+)/.test(sim.stdout); i++)
    await new Promise((r) => setTimeout(r, 50))
  simUrl = /listening on (\S+)/.exec(sim.stdout)![1]!
}, 30_000)

afterAll(async () => {
  await Promise.all([stop(gateway), stop(sim)])
  rmSync(dir, { recursive: true, force: true })
})

interface BenchJson {
  run: { target: string; model: string; seed: number }
  summary: { classes: { class: string; offered: number; good: number }[] }
  requests: BenchRecord[]
}

async function bench(
  target: string,
  out: string,
): Promise<{ p: CliProcess; json: BenchJson; md: string; svg: string }> {
  const p = runCli(['bench', '--target', target, ...RUN, '--out', out])
  const code = await p.exited
  expect(code, p.stderr).toBe(0)
  for (const f of ['bench.json', 'summary.md', 'ttft-cdf.svg']) expect(existsSync(join(out, f)), f).toBe(true)
  return {
    p,
    json: JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8')) as BenchJson,
    md: readFileSync(join(out, 'summary.md'), 'utf8'),
    svg: readFileSync(join(out, 'ttft-cdf.svg'), 'utf8'),
  }
}

describe('slo-gateway bench', () => {
  it('against the gateway in front of the simulator: every request timed, the gateway headers kept, three files', async () => {
    const { p, json, md, svg } = await bench(gatewayUrl, join(dir, 'gateway'))
    const reqs = json.requests
    expect(reqs.length).toBeGreaterThanOrEqual(8)
    expect(new Set(reqs.map((r) => r.class))).toEqual(new Set(['interactive', 'batch']))
    expect(json.run.model).toBe('meta-llama/Llama-3.1-8B-Instruct') // from GET /v1/models
    const ok = reqs.filter((r) => r.status === 200 && r.error === undefined)
    expect(ok.length).toBeGreaterThanOrEqual(reqs.length - 1)
    for (const r of ok) {
      expect(r.ttftMs).toBeGreaterThan(0)
      expect(r.e2eMs).toBeGreaterThanOrEqual(r.ttftMs!)
      expect(r.outputTokens).toBe(r.maxTokens) // ignore_eos: exactly max_tokens, from the streamed usage
      expect(r.headers['x-gateway-predicted-ttft-ms']).toMatch(/^\d/)
    }
    // service_tier: flex is the gateway's batch class
    expect(ok.filter((r) => r.class === 'batch').every((r) => r.headers['x-gateway-class'] === 'batch')).toBe(
      true,
    )
    expect(
      ok
        .filter((r) => r.class === 'interactive')
        .every((r) => r.headers['x-gateway-class'] === 'interactive'),
    ).toBe(true)
    expect(md).toMatch(/\| interactive \| TTFT 500 ms, TPOT 50 ms \| \d+ \|/)
    expect(md).toMatch(
      /## The gateway's predicted TTFT against the measured\n\n\| class \| requests \|[^\n]*\n[^\n]*\n\| interactive \| \d+ \|/,
    )
    expect(svg.match(/<polyline /g)).toHaveLength(2)
    expect(p.stdout).toContain('## Goodput and SLO attainment by class')
    expect(p.stderr).toMatch(/bench 1s\/3s {2}sent \d+/)
  })

  it('against the simulator directly: the same command works; no gateway headers to report', async () => {
    const { json, md } = await bench(simUrl, join(dir, 'sim'))
    const ok = json.requests.filter((r) => r.status === 200 && r.error === undefined)
    expect(ok.length).toBeGreaterThanOrEqual(8)
    expect(ok.every((r) => r.headers['x-gateway-predicted-ttft-ms'] === undefined)).toBe(true)
    expect(ok.every((r) => r.outputTokens === r.maxTokens && r.tpotMs! > 0)).toBe(true)
    expect(md).toContain('No response carried `x-gateway-predicted-ttft-ms`.')
    // the same seed sends the same requests to both targets (prompts differ only in their run tag)
    const viaGateway = JSON.parse(readFileSync(join(dir, 'gateway', 'bench.json'), 'utf8')) as BenchJson
    const shape = (j: BenchJson) => j.requests.map((r) => [r.class, r.promptTokensSent, r.maxTokens])
    const n = Math.min(json.requests.length, viaGateway.requests.length)
    expect(shape(json).slice(0, n)).toEqual(shape(viaGateway).slice(0, n))
  })

  it('a usage mistake prints the bench usage and exits 2; a bad workload names the path and exits 1', async () => {
    const noTarget = runCli(['bench', '--workload', WORKLOAD])
    expect(await noTarget.exited).toBe(2)
    expect(noTarget.stderr).toContain('slo-gateway bench: --target URL is required')
    expect(noTarget.stderr).toContain('Usage: slo-gateway bench')
    const both = runCli([
      'bench',
      '--target',
      simUrl,
      '--workload',
      WORKLOAD,
      '--rate',
      '1',
      '--concurrency',
      '2',
    ])
    expect(await both.exited).toBe(2)
    const bad = join(dir, 'bad.yaml')
    writeFileSync(
      bad,
      'classes:\n  - name: x\n    prompt_tokens: { dist: lognormal, median: 10 }\n    output_tokens: 5\n',
    )
    const invalid = runCli(['bench', '--target', simUrl, '--workload', bad, '--rate', '1'])
    expect(await invalid.exited).toBe(1)
    expect(invalid.stderr).toContain(`${bad}: classes[0].prompt_tokens.sigma: missing, expected a number`)
  })

  it('an unreachable target stops it before it starts, exit 1', async () => {
    const p = runCli(['bench', '--target', 'http://127.0.0.1:9', '--workload', WORKLOAD, '--requests', '1'])
    expect(await p.exited).toBe(1)
    expect(p.stderr).toContain('cannot reach http://127.0.0.1:9: ECONNREFUSED')
  })
})
