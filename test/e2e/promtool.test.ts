/**
 * promtool on the project's Prometheus artefacts: `check rules` and `test rules` on
 * deploy/prometheus, and `check metrics` on the text of a registry after a scenario.
 * promtool comes from Debian's `prometheus` package (.ci/run installs it); without it
 * these tests fail, saying so: they are part of `npm test`.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { METRICS } from '../../src/telemetry/index.js'
import { FakeBackends, setup, testConfig } from '../unit/telemetry/fixtures.js'
import { scenario } from '../unit/telemetry/scenario-tickets.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const PROM_DIR = join(ROOT, 'deploy', 'prometheus')

/** `PROMTOOL` names the binary explicitly; else PATH, /usr/bin, /usr/local/bin. */
function findPromtool(): string | undefined {
  const explicit = process.env.PROMTOOL
  if (explicit !== undefined && explicit !== '') return existsSync(explicit) ? explicit : undefined
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/local/bin']
  for (const d of dirs) {
    const p = join(d, 'promtool')
    if (d !== '' && existsSync(p)) return p
  }
  return undefined
}

const promtool = findPromtool()

function run(args: string[], input?: string) {
  const r = spawnSync(promtool!, args, { cwd: PROM_DIR, input, encoding: 'utf8', timeout: 120_000 })
  return { code: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` }
}

describe('promtool', () => {
  it('is installed (Debian: apt-get install prometheus)', () => {
    expect(promtool, 'promtool not found on PATH or in /usr/bin').toBeDefined()
  })

  it('check rules: recording rules and alerts', () => {
    const r = run(['check', 'rules', 'recording-rules.yml', 'alerts.yml'])
    expect(r.out).toContain('SUCCESS')
    expect(r.code, r.out).toBe(0)
  })

  it('test rules: every alert firing and not firing, and the recording rules', () => {
    const files = readdirSync(join(PROM_DIR, 'tests'))
      .filter((f) => f.endsWith('.test.yml'))
      .map((f) => join('tests', f))
    expect(files.length).toBeGreaterThanOrEqual(3)
    const r = run(['test', 'rules', ...files])
    expect(r.code, r.out).toBe(0)
    expect(r.out).not.toContain('FAILED')
  }, 120_000)

  it('check metrics: the registry after a scenario is clean', async () => {
    const config = testConfig()
    let fake: FakeBackends | undefined
    const { registry, telemetry, clock } = setup(config, (c) => {
      fake = new FakeBackends(config, { main: ['main-0', 'main-1'] }, c)
      return fake
    })
    fake!.setLoad('main-0', {
      running: 4,
      preemptionsTotal: 3,
      prefixCacheQueriesTotal: 100,
      prefixCacheHitsTotal: 40,
    })
    fake!.setLoad('main-1', { running: 0 })
    telemetry.setQueueSource(() => [
      { class: 'interactive', pool: 'main', queued: 2, inflight: 5 },
      { class: 'batch', pool: 'main', queued: 40, inflight: 1 },
    ])
    for (const t of scenario(() => clock.now())) telemetry.record(t)
    telemetry.observeHttp('/v1/chat/completions', 'POST', 200, 0.12)
    telemetry.observeHttp('/metrics', 'GET', 200, 0.002)
    clock.advance(20_000)
    fake!.setLoad('main-0', { running: 4 })
    const text = await registry.metrics()
    // Every family is present, so the check covers all of them.
    for (const name of Object.values(METRICS)) expect(text).toContain(`# TYPE ${name} `)
    const r = run(['check', 'metrics'], text)
    expect(r.out.trim()).toBe('')
    expect(r.code, r.out).toBe(0)
    telemetry.close()
  })
})
