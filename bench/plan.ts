/**
 * npm run bench:plan: does `slo-gateway plan` agree with reality? For two profiles and two
 * workloads, the max goodput per replica that plan predicts (virtual time, the real admission
 * in front of the simulator's engine) beside what `slo-gateway bench --find-max-goodput`
 * measures (loadgen's findMaxGoodput: open-loop trials, bracket and bisect) against a real
 * `slo-gateway sim` process (one replica) through a real `slo-gateway serve`. Agreement: within
 * 15%. It also times plan on a 600-simulated-second sweep of 8 rates (the target: < 30 s).
 * Writes bench/results/plan.md.
 *
 *   npm run bench:plan                 # the full run (the lead's)
 *   npm run bench:plan -- --quick      # one profile x one workload, short trials (a smoke, < 90 s)
 *   --time-scale K                     # the simulator K times slower, objectives K times looser
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { stringify } from 'yaml'
import { loadConfig } from '../src/config/load.js'
import { poolSchema } from '../src/config/schema.js'
import { runPlan } from '../src/contract/plan/plan.js'
import { typicalByClass } from '../src/contract/workload-classes.js'
import { findMaxGoodput } from '../src/loadgen/find-max-goodput.js'
import { loadWorkload } from '../src/loadgen/workload-load.js'
import { loadProfile } from '../src/sim/profile-loader.js'
import { type Child, freePort, start, waitReady } from './processes.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const CLI = join(ROOT, 'src', 'cli.ts')
const TSX = import.meta.resolve('tsx')
const args = process.argv.slice(2)
const quick = args.includes('--quick')
const scaleAt = args.indexOf('--time-scale')
const K = scaleAt >= 0 ? Number(args[scaleAt + 1]) : 1
if (!(K >= 1)) throw new Error('--time-scale: expected a number >= 1')

const PROFILES = quick ? ['llama-3.1-8b-h100'] : ['llama-3.1-8b-h100', 'llama-3.1-70b-h100-tp4']
const WORKLOADS = quick ? ['chat'] : ['chat', 'chat-plus-batch']
const TRIAL_S = quick ? 15 : 60
const MAX_TRIALS = quick ? 3 : 8
const TOLERANCE = quick ? 0.1 : 0.04
const AGREE = 0.15

const log = (s: string) => process.stderr.write(`${s}\n`)

/** The workload with its objectives K times looser (what a K-times slower engine may take). */
function scaledWorkload(file: string, dir: string): string {
  if (K === 1) return file
  const w = loadWorkload(file).workload
  const scaled = {
    ...w,
    classes: w.classes.map((c) => ({
      ...c,
      slo: Object.fromEntries(Object.entries(c.slo).map(([k, v]) => [k, (v as number) * K])),
    })),
  }
  const out = join(dir, `scaled-${file.split('/').pop()}`)
  writeFileSync(out, stringify(scaled))
  return out
}

/** The gateway's knobs in engine time, K times longer (objectives, priors, windows). */
function scaledSets(): string[] {
  if (K === 1) return []
  return [
    `classes.interactive.slo.ttft_ms=${500 * K}`,
    `classes.interactive.slo.tpot_ms=${50 * K}`,
    `admission.estimator.step_ms=${15 * K}`,
    `admission.estimator.prefill_tokens_per_s=${20_000 / K}`,
    `admission.itl_window_ms=${200 * K}`,
  ]
}

async function ok(url: string): Promise<boolean> {
  const r = await request(url)
  await r.body.dump()
  return r.statusCode === 200
}

async function measure(profile: string, workloadFile: string, startRate: number) {
  const simPort = await freePort()
  const port = await freePort()
  const adminPort = await freePort()
  const children: Child[] = []
  try {
    const sim = start('sim', process.execPath, [
      '--import',
      TSX,
      CLI,
      'sim',
      '--profile',
      profile,
      '--replicas',
      '1',
      '--port',
      String(simPort),
      '--time-scale',
      String(K),
    ])
    children.push(sim)
    await waitReady(sim, () => ok(`http://127.0.0.1:${simPort}/health`))
    const sets = ['simulator.enabled=false', 'log.level=warn', 'server.host=127.0.0.1', ...scaledSets()]
    const gw = start('gateway', process.execPath, [
      '--import',
      TSX,
      CLI,
      'serve',
      '--upstream',
      `http://127.0.0.1:${simPort}`,
      '--port',
      String(port),
      '--admin-port',
      String(adminPort),
      ...sets.flatMap((s) => ['--set', s]),
    ])
    children.push(gw)
    await waitReady(gw, () => ok(`http://127.0.0.1:${adminPort}/readyz`))
    return await findMaxGoodput({
      target: `http://127.0.0.1:${port}`,
      workload: workloadFile,
      attainment: 0.9,
      startRate: startRate / K,
      durationS: TRIAL_S * K,
      tolerance: TOLERANCE,
      maxTrials: MAX_TRIALS,
      log,
    })
  } finally {
    for (const c of children.reverse()) await c.stop()
  }
}

interface Row {
  profile: string
  workload: string
  planned: number
  plannedNoAdmission: number
  measured: number
  measuredFail: number | undefined
  trials: number
  error: number
  planCpuS: number
}

async function main(): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'bench-plan-'))
  const { config } = loadConfig(join(ROOT, 'config', 'gateway.yaml'))
  const pool = poolSchema.parse({ name: 'default', models: ['*'] })
  const rows: Row[] = []
  const started = performance.now()
  for (const profileName of PROFILES) {
    for (const name of WORKLOADS) {
      const file = join(ROOT, 'config', 'workloads', `${name}.yaml`)
      const workload = loadWorkload(file)
      const typical = [...typicalByClass(workload).values()]
      const mean = (k: 'promptTokens' | 'outputTokens') =>
        typical.reduce((s, t) => s + t[k], 0) / typical.length
      const profile = loadProfile(profileName)
      log(`plan: ${profileName} x ${name} (${TRIAL_S} simulated s per rate)`)
      const plan = runPlan({
        profile,
        config,
        pool,
        workload,
        typical: { promptTokens: mean('promptTokens'), outputTokens: mean('outputTokens') },
        durationMs: TRIAL_S * 1000,
        drainMs: workload.workload.drain_timeout_s * 1000,
        attainment: 0.9,
        headroom: 0.25,
        tolerance: 0.02,
        maxSearchRuns: 8,
      })
      log(`plan: predicts ${plan.withAdmission.rate} req/s per replica with admission; measuring`)
      const real = await measure(profileName, scaledWorkload(file, tmp), plan.withAdmission.rate)
      const measured = real.rate * K
      rows.push({
        profile: profileName,
        workload: name,
        planned: plan.withAdmission.rate,
        plannedNoAdmission: plan.withoutAdmission.rate,
        measured,
        measuredFail: real.failRate === undefined ? undefined : real.failRate * K,
        trials: real.trials.length,
        error: measured > 0 ? (plan.withAdmission.rate - measured) / measured : Number.NaN,
        planCpuS: plan.timing.totalMs / 1000,
      })
      log(`plan: measured ${measured.toFixed(2)} req/s per replica (${real.stop})`)
    }
  }
  // the speed target: a 600-simulated-second sweep of 8 rates (with and without admission)
  const sweepS = quick ? 60 : 600
  const w = loadWorkload(join(ROOT, 'config', 'workloads', 'chat.yaml'))
  const timed = runPlan({
    profile: loadProfile('llama-3.1-8b-h100'),
    config,
    pool,
    workload: w,
    typical: { promptTokens: 1000, outputTokens: 120 },
    durationMs: sweepS * 1000,
    drainMs: 60_000,
    attainment: 0.9,
    headroom: 0.25,
    tolerance: 0.5,
    maxSearchRuns: 0,
  })
  writeReport(rows, timed.timing.sweepMs / 1000, sweepS, (performance.now() - started) / 1000)
}

function writeReport(rows: Row[], sweepS: number, simulatedS: number, wallS: number): void {
  const f = (v: number | undefined, d = 2) => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(d))
  const lines = [
    '# plan against reality',
    '',
    `${new Date().toISOString()}; ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}; node ${process.version}; ${quick ? 'QUICK (a smoke: short trials, a loose search)' : 'full'}; time scale ${K}; trials of ${TRIAL_S} engine-seconds; attainment target 0.9 (every request); agreement: within ${AGREE * 100}%.`,
    '',
    "Planned: `slo-gateway plan` (virtual time, one replica, the default config's admission). Measured: `findMaxGoodput` (what `slo-gateway bench --find-max-goodput` runs) against `slo-gateway sim --replicas 1` through `slo-gateway serve --upstream`, the same seeded workload.",
    '',
    '| profile | workload | planned req/s (admission) | planned (no admission) | measured req/s | lowest measured miss | trials | error | within 15% | plan CPU s |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.profile} | ${r.workload} | ${f(r.planned)} | ${f(r.plannedNoAdmission)} | ${f(r.measured)} | ${f(r.measuredFail)} | ${r.trials} | ${f(r.error * 100, 1)}% | ${Math.abs(r.error) <= AGREE ? 'yes' : 'NO'} | ${f(r.planCpuS, 1)} |`,
    ),
    '',
    `Speed: plan's sweep of 8 rates x ${simulatedS} simulated s, with and without admission (16 runs), took ${sweepS.toFixed(1)} s (target for 600 s: < 30 s).`,
    '',
    `Whole bench: ${wallS.toFixed(0)} s.`,
    '',
  ]
  const dir = join(ROOT, 'bench', 'results')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'plan.md'), lines.join('\n'))
  process.stdout.write(lines.join('\n'))
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:plan: ${(err as Error).stack ?? String(err)}\n`)
  process.exitCode = 1
})
