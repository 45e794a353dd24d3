/**
 * Issue 14's bench targets (acceptance 2), per workload, as rows of hit or missed with the
 * figure behind each. Benchmarks report; they never assert: a miss is a row, not a failure.
 */
import { fmt, type Report } from '../src/loadgen/report.js'
import { bestHaproxy, pathLabel, ratioToBest } from './admission-compare.js'
import type { EstimatorError, SegmentMetrics } from './admission-metrics.js'
import { longestVsShortest, type Quality, type RetryQuality, type RetryTally } from './admission-quality.js'
import { type LevelResult, pct } from './admission-report.js'

export const TARGETS_14 = {
  ratioAt4: 1.5,
  ratioAt2: 1.2,
  ratioEvery: 1,
  admittedGood: 0.95,
  queueTimeout: 0.02,
  refusalWallMs: 5,
  estP50: 0.15,
  estP90: 0.35,
  coldP90: 0.6,
  bucketRatio: 2,
} as const

export interface WorkloadOutcome {
  readonly name: string
  readonly levels: readonly LevelResult[]
  /** Interactive estimator error in the cold-start window (a fresh gateway, default config). */
  readonly cold: EstimatorError
  /** ... and over the levels after it (steady state). */
  readonly steady: EstimatorError
  /** Length-aware objectives on (the bucket target applies). */
  readonly lengthAware: boolean
}

export interface TargetRow {
  readonly workload: string
  readonly target: string
  readonly figure: string
  /** undefined: nothing to judge (a path missing, nothing refused). */
  readonly hit: boolean | undefined
}

const judged = (ok: boolean | undefined) => (ok === undefined ? 'n/a' : ok ? 'hit' : '**missed**')

function ratioRows(w: WorkloadOutcome): TargetRow[] {
  const rows: TargetRow[] = []
  for (const l of w.levels) {
    const r = ratioToBest(l)
    const b = bestHaproxy(l.runs)
    const need =
      l.level >= 4 ? TARGETS_14.ratioAt4 : l.level >= 2 ? TARGETS_14.ratioAt2 : TARGETS_14.ratioEvery
    const g = l.runs.gateway?.perClass.interactive.goodputRps
    rows.push({
      workload: w.name,
      target: `${l.level}×: goodput ≥ ${need}× best HAProxy`,
      figure:
        g === undefined || b === undefined
          ? 'n/a'
          : `${fmt(g, 2)} vs ${fmt(b.goodputRps, 2)} req/s (${pathLabel(b.key)}) = ${Number.isFinite(r) ? `${fmt(r, 2)}×` : r > 0 ? '∞' : 'n/a'}`,
      hit: Number.isNaN(r) ? undefined : r >= need,
    })
  }
  return rows
}

function overloadRows(w: WorkloadOutcome): TargetRow[] {
  const rows: TargetRow[] = []
  for (const l of w.levels.filter((x) => x.level >= 2)) {
    const i = l.runs.gateway?.perClass.interactive
    const q = l.quality.gateway
    if (i === undefined || q === undefined) continue
    rows.push(
      {
        workload: w.name,
        target: `${l.level}×: admitted meeting TTFT and TPOT ≥ ${pct(TARGETS_14.admittedGood, 0)}`,
        figure: `${pct(i.attainmentAdmitted)} of ${i.admitted} (${pct(i.attainmentAdmittedAtEnd)} with each stream judged at its end: its whole TPOT)`,
        hit: i.admitted > 0 ? i.attainmentAdmitted >= TARGETS_14.admittedGood : undefined,
      },
      {
        workload: w.name,
        target: `${l.level}×: queue_timeout ≤ ${pct(TARGETS_14.queueTimeout, 0)} of admitted`,
        figure: `${q.queueTimeouts} = ${pct(q.queueTimeoutShare)}`,
        hit: Number.isNaN(q.queueTimeoutShare) ? undefined : q.queueTimeoutShare <= TARGETS_14.queueTimeout,
      },
      {
        workload: w.name,
        target: `${l.level}×: refusal at arrival p99 < ${TARGETS_14.refusalWallMs} ms (wall)`,
        figure:
          q.refusals === 0
            ? 'no refusals'
            : `${fmt(q.refusalP99WallMs, 1)} ms (n=${q.refusals}; p50 ${fmt(q.refusalP50WallMs, 1)}, p90 ${fmt(q.refusalP90WallMs, 1)} ms)${splitText(q)}${loopText(l.runs.gateway)}`,
        hit: q.refusals === 0 ? undefined : q.refusalP99WallMs < TARGETS_14.refusalWallMs,
      },
      {
        workload: w.name,
        target: `${l.level}×: a refusal sent again after its Retry-After (information)`,
        figure: retryText(q.retries),
        hit: undefined,
      },
      {
        workload: w.name,
        target: `${l.level}×: refused from the queue before its deadline (early refusal; information)`,
        figure:
          q.queueRefusals === 0
            ? 'none'
            : `${q.queueRefusals} = ${pct(q.queueRefusalShare)} of queued, after p99 ${fmt(q.queueRefusalP99Ms, 0)} ms`,
        hit: undefined,
      },
    )
  }
  return rows
}

const armText = (t: RetryTally) =>
  `${t.admitted} of ${t.sent} admitted (${t.met} met both objectives), ${t.refusedAgain} refused again`

/** What became of refusals sent again after their Retry-After, and after half of it. */
function retryText(r: RetryQuality): string {
  if (r.withRetryAfter === 0) return 'no refusal with a Retry-After'
  const arm = (t: RetryTally) => (t.sent === 0 ? 'none sent' : armText(t))
  const beyond =
    r.beyondLevel === 0 ? '' : `; ${r.beyondLevel} not sent again (their wait ran past the level's end)`
  return (
    `Retry-After p50 ${fmt(r.retryAfterP50Ms, 0)} ms, p90 ${fmt(r.retryAfterP90Ms, 0)} ms (n=${r.withRetryAfter}); ` +
    `sent again after it: ${arm(r.at)}; after half of it: ${arm(r.half)}${beyond}`
  )
}

/** Where a refusal on arrival's wait went: the gateway's own share, the wait on an open connection. */
function splitText(q: Quality): string {
  const parts: string[] = []
  if (!Number.isNaN(q.refusalGatewayP99WallMs))
    parts.push(`the gateway held them p99 ${fmt(q.refusalGatewayP99WallMs, 2)} ms (its server-timing)`)
  if (!Number.isNaN(q.refusalOpenP99WallMs))
    parts.push(`from the write on an open connection p99 ${fmt(q.refusalOpenP99WallMs, 1)} ms`)
  if (q.refusalsOnNewConnection > 0)
    parts.push(
      `${q.refusalsOnNewConnection} opened a connection first (p99 ${fmt(q.refusalNewConnectionP99WallMs, 1)} ms)`,
    )
  return parts.length === 0 ? '' : `; ${parts.join(', ')}`
}

/**
 * The gateway's own event-loop delay and CPU in the window, and the load generator's: what a
 * refusal at arrival waits behind at each end.
 */
function loopText(
  r: Pick<SegmentMetrics, 'gatewayLoopP99Ms' | 'gatewayCpu' | 'clientLoopP99Ms' | 'controlP99Ms'> | undefined,
): string {
  if (r?.gatewayLoopP99Ms === undefined) return ''
  const cpu = r.gatewayCpu === undefined ? '' : `, its CPU ${pct(r.gatewayCpu, 0)} of a core`
  const client = Number.isNaN(r.clientLoopP99Ms)
    ? ''
    : `; the load generator's (its interactive thread's) event-loop delay p99 ${fmt(r.clientLoopP99Ms, 1)} ms`
  const control = Number.isNaN(r.controlP99Ms)
    ? ''
    : `; a control (a Node server here that only refuses, probed from that thread in the window) p99 ${fmt(r.controlP99Ms, 1)} ms`
  return `; the gateway's event-loop delay p99 ${fmt(r.gatewayLoopP99Ms, 1)} ms${cpu}${client}${control}`
}

function estimatorRows(w: WorkloadOutcome): TargetRow[] {
  const e = w.steady
  const c = w.cold
  const has = (x: EstimatorError) => (x.count > 0 ? true : undefined)
  return [
    {
      workload: w.name,
      target: `estimator at the client, steady: p50 ≤ ${pct(TARGETS_14.estP50, 0)}, p90 ≤ ${pct(TARGETS_14.estP90, 0)}`,
      figure: `p50 ${pct(e.medianAbs)}, p90 ${pct(e.p90Abs)} (n=${e.count}, median signed ${pct(e.medianSigned)})`,
      hit: has(e) && e.medianAbs <= TARGETS_14.estP50 && e.p90Abs <= TARGETS_14.estP90,
    },
    {
      workload: w.name,
      target: `estimator at the client, cold start: p90 ≤ ${pct(TARGETS_14.coldP90, 0)}`,
      figure: `p50 ${pct(c.medianAbs)}, p90 ${pct(c.p90Abs)} (n=${c.count})`,
      hit: has(c) && c.p90Abs <= TARGETS_14.coldP90,
    },
  ]
}

function bucketRow(w: WorkloadOutcome): TargetRow[] {
  const l = w.levels.find((x) => x.level === 2)
  const q = l?.quality.gateway
  if (q === undefined) return []
  const { ratio, text } = longestVsShortest(q.buckets)
  return [
    {
      workload: w.name,
      target: `2×: refusal rate longest ÷ shortest prompt bucket ≤ ${TARGETS_14.bucketRatio}${w.lengthAware ? '' : ' (objectives not length-aware: information)'}`,
      figure: `${text} = ${Number.isFinite(ratio) ? fmt(ratio, 2) : ratio > 0 ? '∞' : 'n/a'}`,
      hit: w.lengthAware && !Number.isNaN(ratio) ? ratio <= TARGETS_14.bucketRatio : undefined,
    },
  ]
}

export function targetRows(w: WorkloadOutcome): TargetRow[] {
  return [...ratioRows(w), ...overloadRows(w), ...estimatorRows(w), ...bucketRow(w)]
}

export function targetsTable(report: Report, outcomes: readonly WorkloadOutcome[]): void {
  const rows = outcomes.flatMap(targetRows)
  const hits = rows.filter((r) => r.hit === true).length
  const misses = rows.filter((r) => r.hit === false).length
  report.paragraph(
    `${hits} hit, ${misses} missed, ${rows.length - hits - misses} not judged (n/a or information).`,
  )
  report.table(
    ['workload', 'target', 'measured', 'verdict'],
    rows.map((r) => [r.workload, r.target, r.figure, judged(r.hit)]),
  )
  const retries = retriesInAll(outcomes)
  if (retries.at.sent + retries.half.sent > 0)
    report.paragraph(
      `Retry-After at the client, every workload at 2× and 4× together: sent again after it, ${armText(retries.at)}; ` +
        `after half of it, ${armText(retries.half)}.`,
    )
}

/** The retries of every workload's 2× and 4× levels, summed by arm. */
export function retriesInAll(outcomes: readonly WorkloadOutcome[]): { at: RetryTally; half: RetryTally } {
  const sum = (a: RetryTally, b: RetryTally): RetryTally => ({
    sent: a.sent + b.sent,
    admitted: a.admitted + b.admitted,
    met: a.met + b.met,
    refusedAgain: a.refusedAgain + b.refusedAgain,
  })
  const none: RetryTally = { sent: 0, admitted: 0, met: 0, refusedAgain: 0 }
  let at = none
  let half = none
  for (const w of outcomes)
    for (const l of w.levels) {
      const r = l.level >= 2 ? l.quality.gateway?.retries : undefined
      if (r === undefined) continue
      at = sum(at, r.at)
      half = sum(half, r.half)
    }
  return { at, half }
}
