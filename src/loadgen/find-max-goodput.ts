/**
 * `findMaxGoodput`: the highest offered rate at which a target keeps the SLO attainment of
 * offered requests at or above a target share (default 0.9): DistServe's goodput per server.
 * Each trial is an open-loop run of the workload at one rate (its seeded requests, a fresh run
 * tag); the rates come from searchMaxRate (goodput-search.ts: double or halve to bracket, then
 * bisect to a tolerance, at most maxTrials). The first rate is `startRate`, else half of
 * `capacity`, else half of the saturation throughput measured first (capacity-probe.ts).
 *
 * This is the function `slo-gateway bench --find-max-goodput` runs, and the one other tools
 * (a capacity plan checked against reality) call with a target URL and a workload.
 */
import type { Progress } from './bench-run.js'
import { BenchError, BenchSession, type SessionOptions } from './bench-session.js'
import { type CapacityResult, measureCapacity } from './capacity-probe.js'
import { type SearchTrial, type StopReason, searchMaxRate } from './goodput-search.js'
import { type LevelPoint, LevelRunner, pointLine } from './load-levels.js'
import { fmt } from './report.js'

export interface FindMaxGoodputOptions extends SessionOptions {
  /** The attainment of offered requests a rate must keep, in (0, 1]. Default 0.9. */
  readonly attainment?: number
  /** Judge by this class alone (default: every class together). */
  readonly sloClass?: string
  /** The first rate tried, requests/s. */
  readonly startRate?: number
  /** A known capacity, requests/s: the search starts at half of it. */
  readonly capacity?: number
  /** Each trial's length (default 30 s) or number of requests. */
  readonly durationS?: number
  readonly requests?: number
  readonly tolerance?: number
  /** The search's bracket factor (default 2; see goodput-search.ts). */
  readonly step?: number
  readonly maxTrials?: number
  /** Length of each step of the capacity ramp, when it runs. Default 10 s. */
  readonly probeStepS?: number
  /** A pause between trials. Default 1 s. */
  readonly pauseMs?: number
  /** Progress lines (one per trial, one per capacity step). */
  readonly log?: (line: string) => void
  /** A progress callback for each trial (made afresh per trial). */
  readonly progress?: () => (p: Progress) => void
  /** Run on this open session instead of opening one (target, workload, model and seed then unused). */
  readonly session?: BenchSession
}

export interface MaxGoodputResult {
  /** The highest offered rate that kept the attainment, requests/s; 0 when none did. */
  readonly rate: number
  /** Good requests/s measured at that rate (of the judged class, or all). */
  readonly goodputRps: number
  /** The attainment measured at that rate. */
  readonly attainment: number
  readonly targetAttainment: number
  readonly sloClass: string | undefined
  /** The lowest rate that missed the target (undefined when none did). */
  readonly failRate: number | undefined
  readonly stop: StopReason
  /** Every trial, in the order run. */
  readonly trials: readonly LevelPoint[]
  /** The capacity ramp, when it ran. */
  readonly capacity: CapacityResult | undefined
  readonly model: string
  readonly seed: number
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`

export async function findMaxGoodput(o: FindMaxGoodputOptions): Promise<MaxGoodputResult> {
  const target = o.attainment ?? 0.9
  if (!(target > 0 && target <= 1))
    throw new RangeError(`attainment: expected a share in (0, 1], got ${o.attainment}`)
  const session = o.session ?? (await BenchSession.open(o))
  try {
    const log = o.log ?? (() => {})
    const runner = new LevelRunner(session, {
      ...(o.requests === undefined ? { durationS: o.durationS ?? 30 } : { requests: o.requests }),
      ...(o.sloClass === undefined ? {} : { sloClass: o.sloClass }),
      pauseMs: o.pauseMs ?? 1000,
      ...(o.progress === undefined ? {} : { progress: o.progress }),
    })
    let capacity: CapacityResult | undefined
    let start = o.startRate ?? (o.capacity === undefined ? undefined : o.capacity / 2)
    if (start === undefined) {
      log(
        `find-max-goodput: measuring the saturation throughput first (closed-loop ramp, ${o.probeStepS ?? 10} s a step)`,
      )
      capacity = await measureCapacity(session, o.probeStepS ?? 10, log)
      if (!(capacity.capacity > 0))
        throw new BenchError('the capacity ramp saw no successful request: is the target serving?')
      log(
        `find-max-goodput: capacity ${fmt(capacity.capacity, 2)} req/s (${capacity.stop}); starting at half of it`,
      )
      start = capacity.capacity / 2
    }
    const points: LevelPoint[] = []
    const res = await searchMaxRate(
      async (rate) => {
        const p = await runner.run(rate)
        points.push(p)
        return p
      },
      {
        start,
        attainment: target,
        ...(o.tolerance === undefined ? {} : { tolerance: o.tolerance }),
        ...(o.maxTrials === undefined ? {} : { maxTrials: o.maxTrials }),
        ...(o.step === undefined ? {} : { step: o.step }),
        onTrial: (t: SearchTrial<unknown>, s) =>
          log(
            `find-max-goodput: trial ${t.n}: ${pointLine(t.outcome as LevelPoint)} -> ${t.pass ? 'pass' : 'miss'} (target ${pct(target)}); ` +
              `highest pass ${s.pass === undefined ? '-' : fmt(s.pass, 2)}, lowest miss ${s.fail === undefined ? '-' : fmt(s.fail, 2)} req/s`,
          ),
      },
    )
    const best = res.best?.outcome
    log(
      best === undefined
        ? `find-max-goodput: no rate kept ${pct(target)} attainment (${res.stop})`
        : `find-max-goodput: ${fmt(best.rate, 2)} req/s kept ${pct(best.attainment)} >= ${pct(target)}; goodput ${fmt(best.goodputRps, 2)} req/s (${res.stop})`,
    )
    return {
      rate: res.rate,
      goodputRps: best?.goodputRps ?? 0,
      attainment: best?.attainment ?? Number.NaN,
      targetAttainment: target,
      sloClass: o.sloClass,
      failRate: res.failRate,
      stop: res.stop,
      trials: points,
      capacity,
      model: session.model,
      seed: session.seed,
    }
  } finally {
    if (o.session === undefined) await session.close()
  }
}
