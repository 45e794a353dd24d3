/**
 * The admission bench's report: setup, capacity, the targets (hit or miss, with the facts
 * behind each), and per class and level the measured figures, direct and through the gateway.
 */

import { fmt, type Report } from '../src/loadgen/report.js'
import {
  type CapacityFacts,
  type EngineWorkRates,
  engineWorkMsPerS,
  heldCapacity,
} from './admission-capacity.js'
import type { ClassMetrics, EstimatorError, Quantiles, SegmentMetrics } from './admission-metrics.js'
import type { Quality } from './admission-quality.js'
import type { BenchClass } from './admission-workload.js'

/** A path's key: direct, nginx, haproxy-N (maxconn N), gateway. */
export type Mode = string

export interface LevelResult {
  readonly level: number
  readonly interactiveRate: number
  readonly batchRate: number
  /** Per path, in the order the paths ran. */
  readonly runs: Partial<Record<Mode, SegmentMetrics>>
  /** Per path: refusals, shedding, degrade actions and refusals by prompt length. */
  readonly quality: Partial<Record<Mode, Quality>>
}

export interface Targets {
  readonly goodputRatio: number
  readonly collapseBelow: number
  readonly batchShare: number
  readonly estMedian: number
  readonly estP90: number
}

export const TARGETS: Targets = {
  goodputRatio: 0.9,
  collapseBelow: 0.5,
  batchShare: 0.8,
  estMedian: 0.15,
  estP90: 0.35,
}

export const pct = (v: number, d = 1) => (Number.isFinite(v) ? `${(v * 100).toFixed(d)}%` : 'n/a')
/** A latency percentile; `≥` when it is a lower bound (a request had no token by the horizon). */
export const ms = (q: Quantiles, key: 'p50' | 'p99') =>
  `${q.lowestCensored <= q[key] ? '≥' : ''}${fmt(q[key], 0)}`
const verdict = (ok: boolean | undefined) => (ok === undefined ? 'n/a' : ok ? '**hit**' : '**MISS**')

export interface Leftover {
  /** Share of the engine interactive's work took, in units of interactive saturation's work. */
  readonly used: number
  /** Output tokens/s batch could have had at the TPOT objective: batch saturation × (held − used). */
  readonly tokS: number
  /** The same with no TPOT objective (FCFS saturation steps): batch saturation × (1 − used). */
  readonly fcfsTokS: number
  /**
   * The same read by load level: interactive offered at L× of its SLO capacity takes L of
   * the server and leaves held × (1 − L) of batch saturation (nothing from 1× on).
   */
  readonly byLevelTokS: number
}

/**
 * Output tokens/s batch could have had at this level. Interactive used
 * u = its engine work in the window (prefill and decode, by the step-time model) ÷ the engine
 * work of interactive saturation. A server that serves interactive within its TPOT objective
 * runs steps of at most that objective, each paying the step-time model's base, so it has
 * held = (1 − base / TPOT objective) ÷ (1 − base / batch saturation's step) of batch
 * saturation's capacity; batch is left held − u of it.
 */
export function leftoverForBatch(interactive: EngineWorkRates, level: number, cap: CapacityFacts): Leftover {
  const work = (r: EngineWorkRates) => engineWorkMsPerS(cap.stepTime, r)
  const used = work(interactive) / work(cap.interactiveSat)
  const sat = cap.batchSat.outputTokensPerS
  const held = heldCapacity(cap)
  return {
    used,
    tokS: Math.max(0, held - used) * sat,
    fcfsTokS: Math.max(0, 1 - used) * sat,
    byLevelTokS: Math.max(0, 1 - level) * held * sat,
  }
}

/** A target row: batch's throughput against a capacity left (none left: no verdict). */
function batchShareRow(label: string, batch: number, left: number, context: string): string[] {
  if (!(left > 0)) return [label, `${fmt(batch, 0)} tok/s`, 'n/a: nothing left', context]
  const share = batch / left
  return [
    label,
    `${fmt(batch, 0)} of ${fmt(left, 0)} tok/s = ${pct(share)}`,
    verdict(share >= TARGETS.batchShare),
    context,
  ]
}

export function reasons(m: ClassMetrics): string {
  const e = Object.entries(m.rejectedBy)
  return e.length === 0 ? '' : e.map(([k, v]) => `${k} ${v}`).join(', ')
}

function classTable(report: Report, levels: readonly LevelResult[], cls: BenchClass): void {
  const rows: (string | number)[][] = []
  for (const l of levels) {
    for (const [mode, r] of Object.entries(l.runs)) {
      if (r === undefined) continue
      const m = r.perClass[cls]
      rows.push([
        `${l.level}×`,
        mode,
        m.offered,
        m.admitted,
        pct(m.rejectionRate),
        reasons(m),
        m.errors === 0
          ? '0'
          : `${m.errors}: ${Object.entries(m.errorsBy)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')}`,
        pct(m.degradationRate),
        ms(m.ttft, 'p50'),
        ms(m.ttft, 'p99'),
        fmt(m.tpot.p50, 1),
        fmt(m.tpot.p99, 1),
        pct(m.attainmentOffered),
        pct(m.attainmentAdmitted),
        fmt(m.goodputRps, 2),
        fmt(m.goodputTokS, 0),
        cls === 'interactive' ? fmt(m.ttftGoodputRps, 2) : '',
        fmt(m.throughputTokS, 0),
        `${m.openBeforeFirst}/${m.openStreaming}`,
      ])
    }
  }
  report.table(
    [
      'load',
      'path',
      'offered',
      'admitted',
      'rejected',
      'by reason',
      'errors',
      'degraded',
      'TTFT p50 ms',
      'TTFT p99 ms',
      'TPOT p50 ms',
      'TPOT p99 ms',
      'attain. of offered',
      'attain. of admitted',
      'goodput req/s',
      'goodput tok/s',
      'TTFT-only goodput req/s',
      'throughput tok/s',
      'open at horizon: no token/streaming',
    ],
    rows,
  )
}

function runTable(report: Report, levels: readonly LevelResult[], cap: CapacityFacts): void {
  const rows: (string | number)[][] = []
  for (const l of levels) {
    for (const [mode, r] of Object.entries(l.runs)) {
      if (r === undefined) continue
      const i = r.perClass.interactive.estimator
      const b = r.perClass.batch.estimator
      const left = leftoverForBatch(r.perClass.interactive, l.level, cap)
      rows.push([
        `${l.level}×`,
        mode,
        pct(r.simBusy),
        r.gatewayBusy === undefined ? '' : pct(r.gatewayBusy),
        fmt(r.perClass.interactive.queueMs.p99, 0),
        i.count === 0 ? '' : `${i.count}: ${pct(i.medianAbs)} / ${pct(i.p90Abs)} (${pct(i.medianSigned)})`,
        b.count === 0 ? '' : `${b.count}: ${pct(b.medianAbs)} / ${pct(b.p90Abs)} (${pct(b.medianSigned)})`,
        pct(left.used),
        fmt(left.tokS, 0),
        pct(r.perClass.batch.throughputTokS / left.tokS),
        pct(r.perClass.batch.throughputTokS / left.fcfsTokS),
        fmt(r.lagP99Ms, 1),
        fmt(r.sendLagP99Ms, 1),
        r.preemptions,
        r.gatewayCpu === undefined ? '' : pct(r.gatewayCpu),
        r.gatewayLoopP99Ms === undefined ? '' : fmt(r.gatewayLoopP99Ms, 1),
        fmt(r.clientLoopP99Ms, 1),
        Number.isNaN(r.controlP99Ms) ? '' : fmt(r.controlP99Ms, 1),
      ])
    }
  }
  report.table(
    [
      'load',
      'path',
      'sim busy (engine)',
      'sim busy (gateway metric)',
      'interactive queue p99 ms',
      'estimator, interactive: n: median / p90 |err| (median signed)',
      'estimator, batch',
      'engine work interactive used',
      'batch capacity left tok/s (at the TPOT objective)',
      'batch throughput / left',
      'batch throughput / left with no TPOT objective',
      'sim step lag p99 ms (wall)',
      'send lag p99 ms (wall)',
      'sim preemptions (KV)',
      'gateway CPU (of one core)',
      'gateway event-loop delay p99 ms (wall)',
      'load generator (interactive thread) event-loop delay p99 ms (wall)',
      'control refusal p99 ms (wall): a Node server that only refuses, probed from that thread',
    ],
    rows,
  )
}

/** Evaluates the targets and writes them with the facts that explain each. */
export function targetsSection(
  report: Report,
  levels: readonly LevelResult[],
  cap: CapacityFacts,
  slo: { ttftMs: number },
  pooledEstimator: EstimatorError,
  /** Batch output tok/s through the gateway with no interactive traffic (the flood alone). */
  batchAlone?: number,
): void {
  const at = (x: number) => levels.find((l) => l.level === x)
  const base = at(1)?.runs.gateway?.perClass.interactive
  const rows: string[][] = []
  for (const x of levels.filter((l) => l.level > 1)) {
    const g = x.runs.gateway?.perClass.interactive
    const d = x.runs.direct?.perClass.interactive
    const ratio = g !== undefined && base !== undefined ? g.goodputRps / base.goodputRps : Number.NaN
    const directShare = d !== undefined ? d.goodputRps / cap.interactiveRps : Number.NaN
    // with (almost) no goodput at 1× there is nothing to keep: a miss, whatever the ratio says
    const noBase = base === undefined || base.goodputRps < 0.05 * cap.interactiveRps
    rows.push([
      `interactive goodput at ${x.level}× through the gateway ≥ ${pct(TARGETS.goodputRatio, 0)} of its 1×`,
      `${fmt(g?.goodputRps ?? Number.NaN)} vs ${fmt(base?.goodputRps ?? Number.NaN)} req/s = ${noBase ? 'n/a' : pct(ratio)}`,
      noBase
        ? '**MISS** (no goodput at 1×)'
        : verdict(Number.isFinite(ratio) ? ratio >= TARGETS.goodputRatio : undefined),
      `admitted ${g?.admitted ?? 0} of ${g?.offered ?? 0}; attainment of admitted ${pct(g?.attainmentAdmitted ?? Number.NaN)}; ` +
        `TPOT p50/p99 ${fmt(g?.tpot.p50 ?? Number.NaN, 0)}/${fmt(g?.tpot.p99 ?? Number.NaN, 0)} ms`,
    ])
    const tRatio = g !== undefined && base !== undefined ? g.ttftGoodputRps / base.ttftGoodputRps : Number.NaN
    const noTtftBase = base === undefined || base.ttftGoodputRps < 0.05 * cap.interactiveRps
    rows.push([
      `(supplementary) the same counting TTFT only, the SLO admission predicts, at ${x.level}×`,
      `${fmt(g?.ttftGoodputRps ?? Number.NaN)} vs ${fmt(base?.ttftGoodputRps ?? Number.NaN)} req/s = ${noTtftBase ? 'n/a' : pct(tRatio)}`,
      noTtftBase
        ? '**MISS** (none at 1×)'
        : verdict(Number.isFinite(tRatio) ? tRatio >= TARGETS.goodputRatio : undefined),
      'requests meeting the TTFT SLO, whatever their TPOT',
    ])
    rows.push([
      `directly, interactive goodput at ${x.level}× collapses (< ${pct(TARGETS.collapseBelow, 0)} of capacity)`,
      `${fmt(d?.goodputRps ?? Number.NaN)} req/s = ${pct(directShare)} of ${fmt(cap.interactiveRps)} req/s`,
      verdict(Number.isFinite(directShare) ? directShare < TARGETS.collapseBelow : undefined),
      `direct TTFT p50 ${d === undefined ? 'n/a' : ms(d.ttft, 'p50')} ms`,
    ])
  }
  for (const l of levels) {
    const g = l.runs.gateway?.perClass.interactive
    if (g === undefined) continue
    const ok = g.ttft.count > 0 ? g.ttft.p99 <= slo.ttftMs && !g.ttft.censored : undefined
    rows.push([
      `p99 TTFT of admitted interactive at ${l.level}× ≤ ${slo.ttftMs} ms`,
      `${ms(g.ttft, 'p99')} ms (n=${g.ttft.count})`,
      g.admitted === 0 ? `n/a: nothing admitted (${g.rejected} of ${g.offered} refused)` : verdict(ok),
      `p90 ${fmt(g.ttft.p90, 0)} ms; ${g.admitted - g.ttftGood} of ${g.admitted} admitted missed the TTFT SLO; ` +
        `${g.openBeforeFirst} had no token at the horizon`,
    ])
  }
  for (const l of levels) {
    const r = l.runs.gateway
    if (r === undefined) continue
    const left = leftoverForBatch(r.perClass.interactive, l.level, cap)
    const batch = r.perClass.batch.throughputTokS
    rows.push(
      batchShareRow(
        `batch throughput at ${l.level}× ≥ ${pct(TARGETS.batchShare, 0)} of the capacity interactive leaves`,
        batch,
        left.tokS,
        `interactive used ${pct(left.used)} of the engine (of ${pct(heldCapacity(cap))} at the TPOT objective); sim busy ${pct(r.simBusy)}`,
      ),
      batchShareRow(
        '(supplementary) the same against FCFS saturation, a server with no TPOT objective',
        batch,
        left.fcfsTokS,
        "the bound no server meeting interactive's TPOT objective reaches",
      ),
      // the other reading of "the capacity interactive leaves", in the unit the levels use
      batchShareRow(
        `(supplementary) the same by load level: interactive at ${l.level}× of its capacity leaves ${pct(Math.max(0, 1 - l.level), 0)} of the server`,
        batch,
        left.byLevelTokS,
        'counts the headroom interactive needs to meet its latency SLO (at 1×, FCFS runs the engine at ' +
          `${pct(cap.interactiveRps / cap.interactiveSat.requestsPerS, 0)} of interactive saturation) as used; the row above counts it as left`,
      ),
    )
  }
  const last = levels[levels.length - 1]
  if (batchAlone !== undefined && last !== undefined) {
    rows.push([
      "(information) the flood alone through the gateway, the run's last segment",
      `${fmt(batchAlone, 0)} tok/s = ${pct(batchAlone / cap.batchSat.outputTokensPerS)} of batch saturation`,
      '',
      `interactive streams admitted at ${last.level}× still finish in its first seconds, so this is a lower bound`,
    ])
  }
  const e = pooledEstimator
  rows.push([
    `estimator median |predicted − actual| / actual ≤ ${pct(TARGETS.estMedian, 0)} (interactive, all gateway runs)`,
    `${pct(e.medianAbs)} (n=${e.count})`,
    verdict(e.count > 0 ? e.medianAbs <= TARGETS.estMedian : undefined),
    `median signed error ${pct(e.medianSigned)} (negative = predicted too low); ` +
      `${e.signed.filter((v) => v === -1).length} predictions were 0 ms`,
  ])
  rows.push([
    `estimator p90 |error| ≤ ${pct(TARGETS.estP90, 0)}`,
    pct(e.p90Abs),
    verdict(e.count > 0 ? e.p90Abs <= TARGETS.estP90 : undefined),
    '',
  ])
  report.heading('Targets')
  report.table(['target', 'measured', 'verdict', 'context'], rows)
}

export function resultsSection(report: Report, levels: readonly LevelResult[], cap: CapacityFacts): void {
  report.heading('Interactive class')
  classTable(report, levels, 'interactive')
  report.heading('Batch class')
  classTable(report, levels, 'batch')
  report.paragraph(
    'Batch has no TTFT or TPOT objective, only E2E (30 min, model time): a batch request is good when it ' +
      'finished by the judging horizon. A flood outruns the server by design, so most of it is still queued at ' +
      'the horizon: its attainment is low and its TTFT p99 a lower bound; batch throughput is the figure that ' +
      'matters for it.',
  )
  report.heading('Per run: simulator, estimator, batch backfill')
  runTable(report, levels, cap)
}
