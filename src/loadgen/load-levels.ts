/**
 * Runs of one workload at several offered rates (a sweep's levels, a search's trials), and
 * what each is judged by: the SLO attainment of offered requests, of every class together
 * (the summary's `all` row, or the only class) or of one class.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Progress } from './bench-run.js'
import { BenchError, type BenchSession, type LevelRun } from './bench-session.js'
import type { BenchSummary, GroupStats } from './bench-summary.js'
import { fmt } from './report.js'

export interface LevelPoint {
  /** The offered rate, requests/s. */
  readonly rate: number
  /** The rate as a multiple of the capacity (a sweep's levels). */
  readonly multiple?: number
  /** good / offered of the judged class (or all). */
  readonly attainment: number
  /** good requests/s of the judged class (or all). */
  readonly goodputRps: number
  readonly run: LevelRun
}

/** The row a level is judged by: `sloClass`, else `all`, else the only class. */
export function judgedRow(s: BenchSummary, sloClass?: string): GroupStats | undefined {
  if (sloClass !== undefined) return s.classes.find((c) => c.class === sloClass)
  return s.classes.find((c) => c.class === 'all') ?? s.classes[0]
}

export interface LevelOptions {
  readonly durationS?: number
  readonly requests?: number
  readonly sloClass?: string
  /** A pause before each run but the first, so one level's tail does not load the next. */
  readonly pauseMs?: number
  /** A progress callback for each run (made afresh per run). */
  readonly progress?: () => (p: Progress) => void
}

const pct = (v: number) => (Number.isFinite(v) ? `${(v * 100).toFixed(1)}%` : 'n/a')

export function pointLine(p: LevelPoint): string {
  const s = p.run.summary
  const all = judgedRow(s)
  return (
    `${fmt(p.rate, 2)} req/s${p.multiple === undefined ? '' : ` (${p.multiple}x)`}: attainment ${pct(p.attainment)}, ` +
    `goodput ${fmt(p.goodputRps, 2)} req/s, ${all?.offered ?? 0} offered, ${all?.refused ?? 0} refused, ${all?.failed ?? 0} failed`
  )
}

/** Runs the session's workload at `rate` in an open loop and judges it. */
export class LevelRunner {
  private runs = 0

  constructor(
    private readonly session: BenchSession,
    private readonly o: LevelOptions,
  ) {
    if (o.sloClass !== undefined && !session.workload.classes.some((c) => c.name === o.sloClass))
      throw new BenchError(
        `--slo-class: the workload has no class '${o.sloClass}' (it has ${session.workload.classes.map((c) => c.name).join(', ')})`,
      )
  }

  async run(rate: number, multiple?: number): Promise<LevelPoint> {
    if (this.runs++ > 0 && (this.o.pauseMs ?? 0) > 0) await sleep(this.o.pauseMs)
    const run = await this.session.run({
      mode: { rate },
      ...(this.o.durationS === undefined ? {} : { durationS: this.o.durationS }),
      ...(this.o.requests === undefined ? {} : { requests: this.o.requests }),
      ...(this.o.progress === undefined ? {} : { onProgress: this.o.progress() }),
    })
    const row = judgedRow(run.summary, this.o.sloClass)
    return {
      rate,
      ...(multiple === undefined ? {} : { multiple }),
      attainment: row?.attainmentOffered ?? 0,
      goodputRps: row?.goodputRps ?? 0,
      run,
    }
  }
}
