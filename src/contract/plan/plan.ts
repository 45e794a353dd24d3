/**
 * `slo-gateway plan`: how many requests/s one replica serves within SLO (goodput per
 * replica, as DistServe defines it: the highest offered rate whose SLO attainment stays at
 * or above a target), with the gateway's admission and without it, from the simulator's
 * engine in virtual time (virtual-run.ts); the replicas a target rate needs with headroom;
 * and what a request and a thousand tokens cost at a GPU price.
 *
 * 1. Sweep: 8 rates around a first guess of capacity (capacity-guess.ts), each a run with
 *    and without admission: the table and the SVG.
 * 2. Search, per mode: loadgen's (RateSearch, goodput-search.ts, the one `bench
 *    --find-max-goodput` runs), told the sweep's runs first: they bracket the boundary (the
 *    highest passing rate under the lowest failing one; doubling or halving when they do not);
 *    bisection until the bracket is within `tolerance`, at most `maxSearchRuns` more runs.
 * 3. Replicas for `targetRate`: ceil(target / (max goodput x (1 - headroom))); the plan is run
 *    once more at target / replicas per replica, and its cost figures come from that run.
 */
import type { GatewayConfig, PoolConfig } from '../../config/schema.js'
import { RateSearch } from '../../loadgen/goodput-search.js'
import type { LoadedWorkload } from '../../loadgen/workload-load.js'
import type { SimProfile } from '../../sim/profile-schema.js'
import type { TypicalLengths } from '../workload-classes.js'
import { capacityGuess } from './capacity-guess.js'
import type { RunResult } from './run-outcomes.js'
import { runVirtual } from './virtual-run.js'

export interface PlanSpec {
  readonly profile: SimProfile
  readonly config: GatewayConfig
  readonly pool: PoolConfig
  readonly workload: LoadedWorkload
  /** Typical lengths over every class of the workload (for the first guess). */
  readonly typical: TypicalLengths
  readonly durationMs: number
  readonly drainMs: number
  readonly attainment: number
  readonly sloClass?: string | undefined
  /** Offered rates per replica to sweep (default: 8 around the first guess). */
  readonly rates?: readonly number[] | undefined
  readonly targetRate?: number | undefined
  readonly gpuCostPerHour?: number | undefined
  /** Share of max goodput kept free when sizing (the seeds: 20-30%). */
  readonly headroom: number
  readonly tolerance: number
  readonly maxSearchRuns: number
  readonly seed?: number | undefined
  /** Told of each run as it ends. */
  readonly onRun?: ((admission: boolean, r: RunResult) => void) | undefined
}

export interface SweepPoint {
  readonly rate: number
  readonly withAdmission: RunResult
  readonly withoutAdmission: RunResult
}

export interface MaxGoodput {
  /** The highest rate per replica that passed (0: none). */
  readonly rate: number
  /** Its run. */
  readonly run: RunResult | undefined
  /** The lowest rate that failed (undefined: none did). */
  readonly failRate: number | undefined
  readonly runs: number
}

export interface Sizing {
  readonly targetRate: number
  readonly replicas: number
  readonly perReplicaRate: number
  /** The run at perReplicaRate, with admission. */
  readonly run: RunResult
}

export interface Cost {
  readonly gpuCostPerHour: number
  /** At max goodput per replica, with admission. */
  readonly atMax: CostFigures | undefined
  /** At the target rate on the replicas sized for it. */
  readonly atTarget: CostFigures | undefined
}

export interface CostFigures {
  readonly per1kTokens: number
  readonly per1kOutputTokens: number
  readonly perRequest: number
}

export interface PlanResult {
  readonly profile: string
  readonly workload: string
  readonly attainmentTarget: number
  readonly sloClass: string | undefined
  readonly durationS: number
  readonly capacityGuess: number
  readonly sweep: readonly SweepPoint[]
  readonly withAdmission: MaxGoodput
  readonly withoutAdmission: MaxGoodput
  readonly sizing: Sizing | undefined
  readonly cost: Cost | undefined
  readonly timing: {
    readonly sweepMs: number
    readonly totalMs: number
    readonly runs: number
    readonly simulatedS: number
  }
}

export class PlanError extends Error {
  override readonly name = 'PlanError'
}

const FRACTIONS = [0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.6, 2]

function costFigures(r: RunResult, perHour: number): CostFigures | undefined {
  if (!(r.goodput > 0)) return undefined
  const perS = perHour / 3600
  return {
    per1kTokens: (1000 * perS) / r.goodTokensPerS,
    per1kOutputTokens: (1000 * perS) / r.goodOutputTokensPerS,
    perRequest: perS / r.goodput,
  }
}

export function runPlan(spec: PlanSpec): PlanResult {
  const started = performance.now()
  let runs = 0
  const cache = new Map<string, RunResult>()
  const run = (rate: number, admission: boolean): RunResult => {
    const key = `${admission}:${rate}`
    const hit = cache.get(key)
    if (hit !== undefined) return hit
    runs++
    const r = runVirtual({
      profile: spec.profile,
      config: spec.config,
      pool: spec.pool,
      workload: spec.workload,
      ratePerS: rate,
      replicas: 1,
      durationMs: spec.durationMs,
      drainMs: spec.drainMs,
      admission,
      ...(spec.seed === undefined ? {} : { seed: spec.seed }),
      ...(spec.sloClass === undefined ? {} : { sloClass: spec.sloClass }),
    })
    cache.set(key, r)
    spec.onRun?.(admission, r)
    return r
  }
  const guess = capacityGuess(spec.profile, spec.typical)
  const rates = spec.rates ?? FRACTIONS.map((f) => round3(f * guess))
  if (rates.length === 0 || rates.some((r) => !(r > 0)))
    throw new PlanError('rates: expected positive numbers')
  const sweep = [...rates]
    .sort((a, b) => a - b)
    .map((rate) => ({ rate, withAdmission: run(rate, true), withoutAdmission: run(rate, false) }))
  const sweepMs = performance.now() - started
  // loadgen's search (goodput-search.ts), told the sweep's runs first: it brackets from them
  // (doubling past the highest or halving below the lowest when they do not), then bisects
  const search = (admission: boolean): MaxGoodput => {
    const before = runs
    const s = new RateSearch<RunResult>({
      start: sweep[0]!.rate,
      minRate: sweep[0]!.rate / 16,
      attainment: spec.attainment,
      tolerance: spec.tolerance,
      maxTrials: sweep.length + spec.maxSearchRuns,
    })
    for (const p of sweep) s.record(p.rate, admission ? p.withAdmission : p.withoutAdmission)
    for (let rate = s.next(); rate !== undefined; rate = s.next()) {
      const r = round3(rate)
      s.record(r, run(r, admission))
    }
    const best = s.best
    return { rate: best?.rate ?? 0, run: best?.outcome, failRate: s.state.fail, runs: runs - before }
  }
  const withAdmission = search(true)
  const withoutAdmission = search(false)
  let sizing: Sizing | undefined
  if (spec.targetRate !== undefined && withAdmission.rate > 0) {
    const replicas = Math.max(1, Math.ceil(spec.targetRate / (withAdmission.rate * (1 - spec.headroom))))
    const perReplicaRate = round3(spec.targetRate / replicas)
    sizing = { targetRate: spec.targetRate, replicas, perReplicaRate, run: run(perReplicaRate, true) }
  }
  const price = spec.gpuCostPerHour
  const cost =
    price === undefined
      ? undefined
      : {
          gpuCostPerHour: price,
          atMax: withAdmission.run === undefined ? undefined : costFigures(withAdmission.run, price),
          atTarget: sizing === undefined ? undefined : costFigures(sizing.run, price),
        }
  return {
    profile: spec.profile.name,
    workload: spec.workload.file,
    attainmentTarget: spec.attainment,
    sloClass: spec.sloClass,
    durationS: spec.durationMs / 1000,
    capacityGuess: round3(guess),
    sweep,
    withAdmission,
    withoutAdmission,
    sizing,
    cost,
    timing: {
      sweepMs,
      totalMs: performance.now() - started,
      runs,
      simulatedS: (runs * spec.durationMs) / 1000,
    },
  }
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000
}
