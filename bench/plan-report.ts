/**
 * bench:plan's report (bench/results/plan.md): per profile x workload, plan's max goodput per
 * replica beside the measured one, and, at every rate the measurement tried, plan's
 * attainment and refusals beside the measured ones (the search's answer carries the width of
 * its last bracket; the per-rate rows show the model's agreement without it); then the time
 * of plan's 600-simulated-second sweep.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'

export interface Counts {
  readonly attainment: number
  readonly offered: number
  readonly refused: number
}

/** One rate the measurement tried (engine time), measured and planned. */
export interface TrialCheck {
  readonly rate: number
  readonly measured: Counts
  readonly planned: Counts
}

export interface PlanRow {
  readonly profile: string
  readonly timeScale: number
  readonly workload: string
  readonly planned: number
  readonly plannedNoAdmission: number
  readonly measured: number
  readonly measuredFail: number | undefined
  readonly trials: number
  /** (planned - measured) / measured. */
  readonly error: number
  readonly planCpuS: number
  readonly checks: readonly TrialCheck[]
}

export interface ReportRun {
  readonly quick: boolean
  readonly trialS: number
  readonly maxTrials: number
  readonly agree: number
  readonly sweepWallS: number
  readonly sweepSimulatedS: number
  readonly loadBefore: number
  readonly wallS: number
  /** The report's file name in `dir` (plan.md by default). */
  readonly file?: string
}

const f = (v: number | undefined, d = 2) => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(d))
const pct = (v: number) => `${f(v * 100, 1)}%`
const share = (c: Counts) => `${c.refused}/${c.offered}`

/** Writes the report (plan.md unless `run.file`) into `dir`; returns its text. */
export function writePlanReport(dir: string, rows: readonly PlanRow[], run: ReportRun): string {
  const lines = [
    '# plan against reality',
    '',
    `${new Date().toISOString()}; ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}; node ${process.version}; load average ${loadavg()[0]?.toFixed(1)} at the end; ${run.quick ? 'QUICK (a smoke: short trials, a loose search)' : 'full'}; trials of ${run.trialS} engine-seconds, at most ${run.maxTrials}; attainment target 0.9 (every request); agreement: within ${run.agree * 100}%.`,
    '',
    "Planned: `slo-gateway plan` (virtual time, one replica, the default config's admission, trials as long as the measured ones, the same seeded requests). Measured: `findMaxGoodput` (what `slo-gateway bench --find-max-goodput` runs, starting at the planned rate and bracketing by a factor of 1.15, `--search-step 1.15`) against `slo-gateway sim --replicas 1 --time-scale K` through `slo-gateway serve --upstream`, every engine-time duration of the gateway's K times longer and the rates K times lower; figures are in engine time (measured rate x K).",
    '',
    '| profile | workload | time scale K | planned req/s (admission) | planned (no admission) | measured req/s | lowest measured miss | trials | error | within 15% | plan CPU s |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.profile} | ${r.workload} | ${r.timeScale} | ${f(r.planned)} | ${f(r.plannedNoAdmission)} | ${f(r.measured)} | ${f(r.measuredFail)} | ${r.trials} | ${f(r.error * 100, 1)}% | ${Math.abs(r.error) <= run.agree ? 'yes' : 'NO'} | ${f(r.planCpuS, 1)} |`,
    ),
    '',
    '## At each rate the measurement tried',
    '',
    'Plan run at the same rate for as long, with admission: attainment, and refused / offered.',
    '',
    '| profile | workload | rate req/s | measured attainment | planned attainment | measured refused | planned refused |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows.flatMap((r) =>
      r.checks.map(
        (c) =>
          `| ${r.profile} | ${r.workload} | ${f(c.rate)} | ${pct(c.measured.attainment)} | ${pct(c.planned.attainment)} | ${share(c.measured)} | ${share(c.planned)} |`,
      ),
    ),
    '',
    `Speed: plan's sweep of 8 rates x ${run.sweepSimulatedS} simulated s, with and without admission (16 runs), took ${run.sweepWallS.toFixed(1)} s of wall time (target for 600 s: < 30 s; load average ${run.loadBefore.toFixed(1)} on ${cpus().length} cores when it began; run under tsx).`,
    '',
    `Whole bench: ${run.wallS.toFixed(0)} s.`,
    '',
  ]
  mkdirSync(dir, { recursive: true })
  const md = lines.join('\n')
  writeFileSync(join(dir, run.file ?? 'plan.md'), md)
  return md
}
