/**
 * `slo-gateway plan --profile P --workload W [...]`: parses the flags, runs the plan
 * (plan.ts) and prints the table, or the JSON; with --out, writes plan.json, plan.md and
 * plan.svg there.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseFlags, UsageError } from '../../cli-flags.js'
import { loadConfig } from '../../config/load.js'
import { poolSchema } from '../../config/schema.js'
import { loadWorkload } from '../../loadgen/workload-load.js'
import { loadProfile } from '../../sim/profile-loader.js'
import { typicalOverClasses } from '../workload-classes.js'
import { runPlan } from './plan.js'
import { planSvg } from './plan-svg.js'
import { planMarkdown } from './plan-text.js'

export const PLAN_USAGE = `Usage: slo-gateway plan --profile P --workload W [options]

Runs the simulator's engine in virtual time (no sockets: minutes of traffic in seconds of
CPU), with the gateway's admission in front and without it, sweeps the offered rate, and
finds the highest rate per replica whose SLO attainment stays >= the target (goodput per
replica, DistServe's definition); the replicas a target rate needs; cost per request and
per 1K tokens. docs/contract.md explains every figure.

Options:
  --profile NAME|FILE        the simulator profile (config/sim-profiles/): model + GPU
  --workload FILE            a bench workload (config/workloads/): classes, lengths, objectives
  --config FILE              the gateway config whose classes, admission and first pool apply
                             (default: the embedded default); --set PATH=VALUE overrides
  --target-rate R            requests/s to size the replicas for
  --gpu-cost-per-hour C      one replica's cost per hour, for cost per request and per 1K tokens
  --duration S               simulated seconds per rate (default 600)
  --rates R1,R2,...          offered rates per replica to sweep (default: 8 around a first guess)
  --attainment A             the share of requests that must be good (default 0.9)
  --slo-class NAME           judge one workload class's attainment (default: every request)
  --headroom H               share of max goodput kept free when sizing (default 0.25)
  --tolerance T              the search stops when its bracket is within T (default 0.03)
  --seed N                   the workload's seed (default: the workload's)
  --json                     the result as JSON
  --out DIR                  also write plan.json, plan.md and plan.svg to DIR
  -h, --help                 this help
`

function num(
  name: string,
  v: string | undefined,
  min: number,
  max = Number.POSITIVE_INFINITY,
): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max || (min === 0 && n === 0))
    throw new UsageError(
      `--${name}: expected a number${max < Infinity ? ` in (${min}, ${max}]` : ' > 0'}, got '${v}'`,
      PLAN_USAGE,
      'plan',
    )
  return n
}

export async function planCommand(argv: string[]): Promise<number> {
  const { values } = parseFlags('plan', PLAN_USAGE, argv, {
    profile: { type: 'string' },
    workload: { type: 'string' },
    config: { type: 'string' },
    set: { type: 'string', multiple: true },
    'target-rate': { type: 'string' },
    'gpu-cost-per-hour': { type: 'string' },
    duration: { type: 'string' },
    rates: { type: 'string' },
    attainment: { type: 'string' },
    'slo-class': { type: 'string' },
    headroom: { type: 'string' },
    tolerance: { type: 'string' },
    seed: { type: 'string' },
    json: { type: 'boolean' },
    out: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  })
  if (values.help) {
    process.stdout.write(PLAN_USAGE)
    return 0
  }
  if (values.profile === undefined) throw new UsageError('--profile is required', PLAN_USAGE, 'plan')
  if (values.workload === undefined) throw new UsageError('--workload is required', PLAN_USAGE, 'plan')
  const rates = values.rates?.split(',').map((r) => num('rates', r, 0) as number)
  const seed = num('seed', values.seed, 0)
  const profile = loadProfile(values.profile)
  const workload = loadWorkload(values.workload)
  const { config } = loadConfig(values.config, values.set ? { sets: values.set } : {}, process.env)
  const sloClass = values['slo-class']
  if (sloClass !== undefined && !workload.workload.classes.some((c) => c.name === sloClass))
    throw new UsageError(
      `--slo-class: the workload has no class '${sloClass}' (classes: ${workload.workload.classes.map((c) => c.name).join(', ')})`,
      PLAN_USAGE,
      'plan',
    )
  const pool = config.backends.pools[0] ?? poolSchema.parse({ name: 'sim', models: ['*'] })
  const result = runPlan({
    profile,
    config,
    pool,
    workload,
    typical: typicalOverClasses(workload),
    durationMs: (num('duration', values.duration, 0) ?? 600) * 1000,
    drainMs: workload.workload.drain_timeout_s * 1000,
    attainment: num('attainment', values.attainment, 0, 1) ?? 0.9,
    sloClass,
    rates,
    targetRate: num('target-rate', values['target-rate'], 0),
    gpuCostPerHour: num('gpu-cost-per-hour', values['gpu-cost-per-hour'], 0),
    headroom: num('headroom', values.headroom, 0, 0.9) ?? 0.25,
    tolerance: num('tolerance', values.tolerance, 0, 0.5) ?? 0.03,
    maxSearchRuns: 8,
    seed,
    onRun: (admission, r) =>
      process.stderr.write(
        `plan: ${r.rate} req/s ${admission ? 'with' : 'without'} admission: attainment ${(r.attainment * 100).toFixed(1)}%, goodput ${r.goodput.toFixed(2)}/s (${(r.cpuMs / 1000).toFixed(1)} s)\n`,
      ),
  })
  const md = planMarkdown(result)
  if (values.out !== undefined) {
    mkdirSync(values.out, { recursive: true })
    writeFileSync(join(values.out, 'plan.json'), `${JSON.stringify(result, null, 2)}\n`)
    writeFileSync(join(values.out, 'plan.md'), md)
    writeFileSync(join(values.out, 'plan.svg'), planSvg(result))
  }
  process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : md)
  return 0
}
