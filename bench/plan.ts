/**
 * npm run bench:plan: does `slo-gateway plan` agree with reality? For two profiles and two
 * workloads, the max goodput per replica that plan predicts (virtual time, the real admission
 * in front of the simulator's engine) beside what `slo-gateway bench --find-max-goodput`
 * measures (loadgen's findMaxGoodput: open-loop trials, bracket and bisect) against a real
 * `slo-gateway sim` process (one replica) through a real `slo-gateway serve`. Agreement: within
 * 15%. It also times plan on a 600-simulated-second sweep of 8 rates (the target: < 30 s).
 * Writes bench/results/plan.md.
 *
 * The measured side is time-scaled: the simulator K times slower (`sim --time-scale K`), and
 * every duration of the gateway's that is engine time K times longer (objectives, queue waits,
 * the decode guard's time constant, the probe interval, the min-share window, the scrape interval and
 * staleness), the rates K times lower; the measured rate is reported times K. So the gateway's
 * and the client's CPU (on a shared machine, milliseconds of event-loop lag) is small beside
 * the engine's steps, as it is beside a GPU's. K defaults per profile to make one decode step
 * of one sequence at least 50 ms. The estimator's priors are not scaled: both sides learn the
 * engine's facts at run time (the plan from the same observations, virtual-endpoint.ts).
 *
 *   npm run bench:plan                 # the full run (the lead's; about 75 minutes)
 *   npm run bench:plan -- --quick      # one profile x one workload, short trials (a smoke)
 *   --time-scale K                     # K for every profile
 *   --profile P, --workload W          # only these (repeatable)
 *   --trial-s S, --max-trials N        # each trial's engine-seconds; the search's trials
 *   --speed-only                       # only the 600-s sweep's time, to bench/results/plan-speed.md
 *   --out NAME                         # the report's file name in bench/results (default plan.md)
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { stringify } from 'yaml'
import { loadConfig } from '../src/config/load.js'
import { poolSchema } from '../src/config/schema.js'
import { runPlan } from '../src/contract/plan/plan.js'
import { runVirtual } from '../src/contract/plan/virtual-run.js'
import { typicalOverClasses } from '../src/contract/workload-classes.js'
import { findMaxGoodput } from '../src/loadgen/find-max-goodput.js'
import { judgedRow } from '../src/loadgen/load-levels.js'
import { loadWorkload } from '../src/loadgen/workload-load.js'
import { loadProfile } from '../src/sim/profile-loader.js'
import type { SimProfile } from '../src/sim/profile-schema.js'
import { type PlanRow, type TrialCheck, writePlanReport } from './plan-report.js'
import { type Child, freePort, start, waitReady } from './processes.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const CLI = join(ROOT, 'src', 'cli.ts')
const TSX = import.meta.resolve('tsx')
const args = process.argv.slice(2)
const quick = args.includes('--quick')
const speedOnly = args.includes('--speed-only')
const all = (flag: string) =>
  args.flatMap((a, i) => (a === flag && args[i + 1] !== undefined ? [args[i + 1]!] : []))
const num = (flag: string): number | undefined => {
  const v = all(flag).at(-1)
  if (v === undefined) return undefined
  const n = Number(v)
  if (!(n > 0)) throw new Error(`${flag}: expected a positive number, got ${v}`)
  return n
}
const GIVEN_K = num('--time-scale')
if (GIVEN_K !== undefined && !(GIVEN_K >= 1)) throw new Error('--time-scale: expected a number >= 1')

const PROFILES =
  all('--profile').length > 0
    ? all('--profile')
    : quick
      ? ['llama-3.1-8b-h100']
      : ['llama-3.1-8b-h100', 'llama-3.1-70b-h100-tp4']
const WORKLOADS =
  all('--workload').length > 0 ? all('--workload') : quick ? ['chat'] : ['chat', 'chat-plus-batch']
const TRIAL_S = num('--trial-s') ?? (quick ? 6 : 30)
const MAX_TRIALS = num('--max-trials') ?? (quick ? 3 : 6)
const OUT = all('--out').at(-1) ?? 'plan.md'
if (OUT.includes('/')) throw new Error('--out: a file name (the report goes to bench/results)')
const TOLERANCE = quick ? 0.1 : 0.05
const AGREE = 0.15
/** The least scaled step (one decode step of one sequence), ms: K is chosen to reach it. */
const LEAST_SCALED_STEP_MS = 50

/** The pool `serve --upstream` makes, with its defaults (the plan's pool). */
const DEFAULT_POOL = poolSchema.parse({ name: 'default', models: ['*'] })

const log = (s: string) => process.stderr.write(`${s}\n`)

/** The workload with its objectives and its drain K times longer (what a K-times slower engine may take). */
function scaledWorkload(file: string, dir: string, K: number): string {
  if (K === 1) return file
  const w = loadWorkload(file).workload
  const scaled = {
    ...w,
    drain_timeout_s: w.drain_timeout_s * K,
    classes: w.classes.map((c) => ({
      ...c,
      slo: Object.fromEntries(Object.entries(c.slo).map(([k, v]) => [k, (v as number) * K])),
    })),
  }
  const out = join(dir, `scaled-${K}-${file.split('/').pop()}`)
  writeFileSync(out, stringify(scaled))
  return out
}

/**
 * The gateway's durations that are engine time, K times longer: the built-in classes'
 * objectives and queue waits, the decode guard's time constant, the probe interval, the min-share
 * window, the pool's scrape interval and staleness (defaults read from the schema). Not the
 * estimator's priors: set, they would be overrides that the engine facts never replace.
 */
function scaledSets(K: number): string[] {
  if (K === 1) return []
  const { config } = loadConfig(join(ROOT, 'config', 'gateway.yaml'))
  const a = config.admission
  const sets = [
    `admission.itl_window_ms=${a.itl_window_ms * K}`,
    `admission.probe_interval_ms=${a.probe_interval_ms * K}`,
    `admission.min_share_window_ms=${a.min_share_window_ms * K}`,
    `backends.pools[0].scrape_interval_ms=${DEFAULT_POOL.scrape_interval_ms * K}`,
    `backends.pools[0].stale_after_ms=${DEFAULT_POOL.stale_after_ms * K}`,
  ]
  for (const [name, c] of Object.entries(config.classes)) {
    sets.push(`classes.${name}.max_queue_wait_ms=${c.max_queue_wait_ms * K}`)
    for (const [k, v] of Object.entries(c.slo))
      if (k.endsWith('_ms') && typeof v === 'number') sets.push(`classes.${name}.slo.${k}=${v * K}`)
  }
  return sets
}

/** K for a profile: --time-scale, else the least integer that makes one step of one sequence >= 50 ms. */
function scaleFor(profile: SimProfile): number {
  if (GIVEN_K !== undefined) return GIVEN_K
  const st = profile.stepTime
  return Math.max(1, Math.ceil(LEAST_SCALED_STEP_MS / (st.baseMs + st.perDecodeSeqMs)))
}

async function ok(url: string): Promise<boolean> {
  const r = await request(url)
  await r.body.dump()
  return r.statusCode === 200
}

async function measure(profile: string, workloadFile: string, startRate: number, K: number) {
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
    const sets = ['simulator.enabled=false', 'log.level=warn', 'server.host=127.0.0.1', ...scaledSets(K)]
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
      // from the plan's answer, up or down by the agreement bound: the first pass and miss say
      // at once whether the measured edge lies within 15% (a bracket by 2 costs two more trials)
      step: 1 + AGREE,
      maxTrials: MAX_TRIALS,
      log,
    })
  } finally {
    for (const c of children.reverse()) await c.stop()
  }
}

async function main(): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'bench-plan-'))
  const { config } = loadConfig(join(ROOT, 'config', 'gateway.yaml'))
  const pool = DEFAULT_POOL
  const rows: PlanRow[] = []
  const started = performance.now()
  for (const profileName of speedOnly ? [] : PROFILES) {
    for (const name of WORKLOADS) {
      const file = join(ROOT, 'config', 'workloads', `${name}.yaml`)
      const workload = loadWorkload(file)
      const profile = loadProfile(profileName)
      const K = scaleFor(profile)
      log(`plan: ${profileName} x ${name} (${TRIAL_S} simulated s per rate; measured at time scale ${K})`)
      const plan = runPlan({
        profile,
        config,
        pool,
        workload,
        typical: typicalOverClasses(workload),
        durationMs: TRIAL_S * 1000,
        drainMs: workload.workload.drain_timeout_s * 1000,
        attainment: 0.9,
        headroom: 0.25,
        tolerance: 0.02,
        maxSearchRuns: 8,
      })
      log(`plan: predicts ${plan.withAdmission.rate} req/s per replica with admission; measuring`)
      const real = await measure(profileName, scaledWorkload(file, tmp, K), plan.withAdmission.rate, K)
      const measured = real.rate * K
      // plan at each rate the measurement tried, as long, the same requests: per-rate agreement
      const checks: TrialCheck[] = real.trials.map((p) => {
        const row = judgedRow(p.run.summary)
        const v = runVirtual({
          profile,
          config,
          pool,
          workload,
          ratePerS: p.rate * K,
          replicas: 1,
          durationMs: TRIAL_S * 1000,
          drainMs: workload.workload.drain_timeout_s * 1000,
          admission: true,
        })
        return {
          rate: p.rate * K,
          measured: { attainment: p.attainment, offered: row?.offered ?? 0, refused: row?.refused ?? 0 },
          planned: { attainment: v.attainment, offered: v.offered, refused: v.refused },
        }
      })
      rows.push({
        profile: profileName,
        timeScale: K,
        workload: name,
        planned: plan.withAdmission.rate,
        plannedNoAdmission: plan.withoutAdmission.rate,
        measured,
        measuredFail: real.failRate === undefined ? undefined : real.failRate * K,
        trials: real.trials.length,
        error: measured > 0 ? (plan.withAdmission.rate - measured) / measured : Number.NaN,
        planCpuS: plan.timing.totalMs / 1000,
        checks,
      })
      log(`plan: measured ${measured.toFixed(2)} req/s per replica (${real.stop})`)
    }
  }
  // the speed target: a 600-simulated-second sweep of 8 rates (with and without admission)
  const sweepS = 600
  const loadBefore = loadavg()[0] ?? Number.NaN
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
  if (speedOnly) {
    const line = `Speed: plan's sweep of 8 rates x ${sweepS} simulated s, with and without admission (16 runs), took ${(timed.timing.sweepMs / 1000).toFixed(1)} s of wall time (target for 600 s: < 30 s; load average ${loadBefore.toFixed(1)} on ${cpus().length} cores when it began; run under tsx). ${new Date().toISOString()}, node ${process.version}; \`npm run bench:plan -- --speed-only\`.\n`
    writeFileSync(join(ROOT, 'bench', 'results', 'plan-speed.md'), `# plan: the speed of a sweep\n\n${line}`)
    process.stdout.write(line)
    return
  }
  const md = writePlanReport(join(ROOT, 'bench', 'results'), rows, {
    quick,
    trialS: TRIAL_S,
    maxTrials: MAX_TRIALS,
    agree: AGREE,
    sweepWallS: timed.timing.sweepMs / 1000,
    sweepSimulatedS: sweepS,
    loadBefore,
    wallS: (performance.now() - started) / 1000,
    file: OUT,
  })
  process.stdout.write(md)
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:plan: ${(err as Error).stack ?? String(err)}\n`)
  process.exitCode = 1
})
