/**
 * What one segment (load level) of the admission bench measured, per class, with the
 * definitions of docs/metrics.md (vLLM's `bench serve`, DistServe), in model time: every
 * latency and rate is converted from wall time by the time scale, so it reads as the real
 * server would show it (a TTFT of 400 here is 400 ms on a real 8B/H100, 1,600 ms of wall time
 * at scale 4).
 *
 * - Judged: requests that arrived in the measured window. Offered = all of them; admitted =
 *   offered − refused by the gateway (a request still queued in the gateway at the judging
 *   horizon was admitted). Good: succeeded and met every SLO of its class.
 * - Judging horizon: the end of the segment's tail. A request still streaming then is judged
 *   on what it streamed (its TTFT, and its TPOT so far; `attainmentAdmittedAtEnd` judges it
 *   at its end instead); one without a first token by then has
 *   a TTFT of at least its time until the horizon (censored): it misses the TTFT SLO, and its
 *   TTFT enters the percentiles as that lower bound (shown as ≥).
 * - Throughput: output tokens that reached the client within the window, whatever request
 *   they belong to, per second of window.
 */

import { percentile, sorted } from '../src/loadgen/report.js'
import { arrivedIn, isAdmitted, isRefusal, type Outcome } from './admission-client.js'
import type { SegmentResult, Snapshot, Window } from './admission-run.js'
import type { BenchClass } from './admission-workload.js'

export interface ClassSlo {
  readonly ttftMs?: number
  /** Length-aware TTFT: the objective grows by this many ms per 1,000 prompt tokens. */
  readonly ttftPer1kMs?: number
  readonly tpotMs?: number
  readonly e2eMs?: number
}

export interface Quantiles {
  readonly p50: number
  readonly p90: number
  readonly p99: number
  /** A lower bound (censored value) lies at or below p99: the true p99 is at least this. */
  readonly censored: boolean
  /** The smallest censored value (∞ without one): a percentile at or above it is a lower bound. */
  readonly lowestCensored: number
  readonly count: number
}

export interface EstimatorError {
  readonly count: number
  readonly medianAbs: number
  readonly p90Abs: number
  readonly medianSigned: number
  /** Every (predicted − actual) / actual, for pooling runs. */
  readonly signed: readonly number[]
}

export interface ClassMetrics {
  readonly offered: number
  readonly admitted: number
  readonly good: number
  /** Met the TTFT objective (whatever their TPOT): shows what admission itself controls. */
  readonly ttftGood: number
  readonly rejected: number
  readonly rejectedBy: Record<string, number>
  readonly errors: number
  /** Errors by HTTP status or, without one, the client's error name. */
  readonly errorsBy: Record<string, number>
  readonly degraded: number
  /** At the judging horizon: no first token yet / still streaming. */
  readonly openBeforeFirst: number
  readonly openStreaming: number
  readonly ttft: Quantiles
  readonly tpot: Quantiles
  readonly queueMs: Quantiles
  readonly attainmentOffered: number
  readonly attainmentAdmitted: number
  /**
   * The same, each stream judged at its end (its whole TPOT, the objective's own definition)
   * where it ended before the run did: a stream still open at the horizon has only its TPOT
   * so far there, which on a slow engine, whose streams outlive a level's window, is most of them.
   */
  readonly attainmentAdmittedAtEnd: number
  readonly goodputRps: number
  readonly goodputTokS: number
  readonly ttftGoodputRps: number
  /** Output tokens received within the window, per second. */
  readonly throughputTokS: number
  /** Prompt tokens of requests whose first token came within the window, per second. */
  readonly promptTokS: number
  /** Output tokens within the window after each request's first (decode steps), per second. */
  readonly decodeTokS: number
  /** Over those tokens, the context each one's step read (prompt + tokens before it), per second. */
  readonly decodeContextTokS: number
  readonly rejectionRate: number
  readonly degradationRate: number
  /** |predicted − actual| / actual over admitted streamed requests with a prediction. */
  readonly estimator: EstimatorError
}

export interface SegmentMetrics {
  readonly perClass: Record<BenchClass, ClassMetrics>
  /** Simulator busy fraction in the window, from its engine's step durations. */
  readonly simBusy: number
  /** The same from the gateway's slo_gateway_backend_busy_seconds_total (gateway runs). */
  readonly gatewayBusy?: number
  /** Sequences the simulator preempted for KV room in the window (they stall: long TPOT). */
  readonly preemptions: number
  /** The gateway process's CPU in the window, in cores (gateway runs). */
  readonly gatewayCpu?: number
  /** Its event-loop delay p99 over the window, wall ms (gateway runs). */
  readonly gatewayLoopP99Ms?: number
  readonly lagP99Ms: number
  readonly sendLagP99Ms: number
  /** The load generator's own event-loop delay p99 in the window, wall ms. */
  readonly clientLoopP99Ms: number
  /** A do-nothing server's refusals probed in the window, p99 wall ms (NaN: not probed; admission-run.ts). */
  readonly controlP99Ms: number
  /** Counters and gateway state at the window's start and end. */
  readonly snapshots: { readonly start: Snapshot; readonly end: Snapshot }
}

/** Error summary of (predicted − actual) / actual values. */
export function estimatorError(signed: readonly number[]): EstimatorError {
  const abs = sorted(signed.map(Math.abs))
  return {
    count: signed.length,
    medianAbs: percentile(abs, 50),
    p90Abs: percentile(abs, 90),
    medianSigned: percentile(sorted(signed), 50),
    signed,
  }
}

function quantiles(values: readonly number[], censored: readonly boolean[] = []): Quantiles {
  const s = sorted(values)
  const p99 = percentile(s, 99)
  let lowestCensored = Number.POSITIVE_INFINITY
  values.forEach((v, i) => {
    if (censored[i] === true && v < lowestCensored) lowestCensored = v
  })
  return {
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99,
    censored: lowestCensored <= p99,
    lowestCensored,
    count: s.length,
  }
}

interface Verdict {
  readonly good: boolean
  readonly ttftGood: boolean
  readonly ttftMs: number
  readonly censored: boolean
  readonly tpotMs?: number
  readonly open: 'no' | 'beforeFirst' | 'streaming'
}

/** A request's TTFT objective (model ms): the class's, plus its length allowance. */
export function ttftObjective(slo: ClassSlo, promptTokens: number): number {
  return (slo.ttftMs ?? Number.POSITIVE_INFINITY) + ((slo.ttftPer1kMs ?? 0) * promptTokens) / 1000
}

/** Judges an admitted request (status 200, or none yet) at the horizon `untilWall` (wall ms). */
export function judge(o: Outcome, slo: ClassSlo, scale: number, untilWall: number): Verdict {
  const tokens = o.tokenMs.filter((t) => t <= untilWall)
  const first = tokens[0]
  const last = tokens[tokens.length - 1]
  // done, and its last token (or its end, for an empty stream) before the horizon
  const finished = o.done && o.tokenMs.length === tokens.length
  if (first === undefined || last === undefined) {
    const ttftMs = (untilWall - o.sentMs) / scale
    return { good: false, ttftGood: false, ttftMs, censored: true, open: finished ? 'no' : 'beforeFirst' }
  }
  const ttftMs = (first - o.sentMs) / scale
  const n = tokens.length
  const tpotMs = n > 1 ? (last - first) / (n - 1) / scale : undefined
  const ttftGood = slo.ttftMs === undefined || ttftMs <= ttftObjective(slo, o.arrival.promptTokens)
  let good = ttftGood
  if (slo.tpotMs !== undefined && tpotMs !== undefined && tpotMs > slo.tpotMs) good = false
  // an E2E objective can only be judged on a finished stream
  if (slo.e2eMs !== undefined && (!finished || (last - o.sentMs) / scale > slo.e2eMs)) good = false
  if (finished && o.usageTokens !== undefined && o.usageTokens !== n) good = false
  return {
    good,
    ttftGood,
    ttftMs,
    censored: false,
    ...(tpotMs !== undefined ? { tpotMs } : {}),
    open: finished ? 'no' : 'streaming',
  }
}

/**
 * For `--raw`: whether `o` arrived in the measured window `w` (the report judges it there)
 * and, if it was admitted, whether it was good at the judging horizon, as the report counts
 * it: the raw outcomes then add up to the report's goodput.
 */
export function rawVerdict(
  o: Outcome,
  w: Window,
  slo: ClassSlo,
  scale: number,
): { judged: boolean; good?: boolean } {
  const judged = arrivedIn(o, w)
  return isAdmitted(o) ? { judged, good: judge(o, slo, scale, w.judgeUntilMs * scale).good } : { judged }
}

export function classMetrics(
  seg: SegmentResult,
  everything: readonly Outcome[],
  cls: BenchClass,
  slo: ClassSlo,
  scale: number,
): ClassMetrics {
  const w: Window = seg.window
  const judged = seg.outcomes.filter((o) => o.arrival.cls === cls && arrivedIn(o, w))
  const winFrom = w.fromMs * scale
  const winTo = w.toMs * scale
  const until = w.judgeUntilMs * scale
  const winSec = w.spanMs / 1000
  const rejectedBy: Record<string, number> = {}
  const errorsBy: Record<string, number> = {}
  const ttft: number[] = []
  const ttftCensored: boolean[] = []
  const tpot: number[] = []
  const queue: number[] = []
  const errSigned: number[] = []
  let admitted = 0
  let good = 0
  let goodAtEnd = 0
  let ttftGood = 0
  let goodTokens = 0
  let errors = 0
  let degraded = 0
  let openBeforeFirst = 0
  let openStreaming = 0
  for (const o of judged) {
    if (isRefusal(o)) {
      const r = o.rejectReason ?? `status_${o.status}`
      rejectedBy[r] = (rejectedBy[r] ?? 0) + 1
      continue
    }
    if (!isAdmitted(o)) {
      errors++
      const k = o.status === 0 ? (o.error ?? 'unknown') : String(o.status)
      errorsBy[k] = (errorsBy[k] ?? 0) + 1
      continue
    }
    // 200, or no status yet when the run was cut off (queued in the gateway or at the server)
    admitted++
    const v = judge(o, slo, scale, until)
    if (judge(o, slo, scale, Number.POSITIVE_INFINITY).good) goodAtEnd++
    if (o.degraded !== undefined) degraded++
    if (v.open === 'beforeFirst') openBeforeFirst++
    if (v.open === 'streaming') openStreaming++
    if (o.queueMs !== undefined) queue.push(o.queueMs / scale)
    ttft.push(v.ttftMs)
    ttftCensored.push(v.censored)
    if (v.tpotMs !== undefined) tpot.push(v.tpotMs)
    if (v.ttftGood) ttftGood++
    if (v.good) {
      good++
      goodTokens += o.tokenMs.filter((t) => t <= until).length
    }
    const first = o.tokenMs[0]
    if (o.predictedTtftMs !== undefined && first !== undefined) {
      const actual = first - o.sentMs
      errSigned.push((o.predictedTtftMs - actual) / actual)
    }
  }
  let tokensInWindow = 0
  let promptInWindow = 0
  let decodeInWindow = 0
  let decodeContext = 0
  for (const o of everything) {
    if (o.arrival.cls !== cls) continue
    o.tokenMs.forEach((t, i) => {
      if (t < winFrom || t >= winTo) return
      tokensInWindow++
      if (i === 0) return
      decodeInWindow++
      decodeContext += o.arrival.promptTokens + i
    })
    const first = o.tokenMs[0]
    if (first !== undefined && first >= winFrom && first < winTo) promptInWindow += o.arrival.promptTokens
  }
  const offered = judged.length
  const rejected = Object.values(rejectedBy).reduce((a, b) => a + b, 0)
  return {
    offered,
    admitted,
    good,
    ttftGood,
    rejected,
    rejectedBy,
    errors,
    errorsBy,
    degraded,
    openBeforeFirst,
    openStreaming,
    ttft: quantiles(ttft, ttftCensored),
    tpot: quantiles(tpot),
    queueMs: quantiles(queue),
    attainmentOffered: offered > 0 ? good / offered : Number.NaN,
    attainmentAdmitted: admitted > 0 ? good / admitted : Number.NaN,
    attainmentAdmittedAtEnd: admitted > 0 ? goodAtEnd / admitted : Number.NaN,
    goodputRps: good / winSec,
    goodputTokS: goodTokens / winSec,
    ttftGoodputRps: ttftGood / winSec,
    throughputTokS: tokensInWindow / winSec,
    promptTokS: promptInWindow / winSec,
    decodeTokS: decodeInWindow / winSec,
    decodeContextTokS: decodeContext / winSec,
    rejectionRate: offered > 0 ? rejected / offered : Number.NaN,
    degradationRate: admitted > 0 ? degraded / admitted : Number.NaN,
    estimator: estimatorError(errSigned),
  }
}

export function segmentMetrics(
  seg: SegmentResult,
  everything: readonly Outcome[],
  slos: Record<BenchClass, ClassSlo>,
  scale: number,
): SegmentMetrics {
  const wallWin = seg.end.atMs - seg.start.atMs
  // a step counts when it begins, so a window can see a little more than 100%: clamped
  const simBusy = Math.min(1, (seg.end.sim.busyMs - seg.start.sim.busyMs) / wallWin)
  const gw =
    seg.end.gatewayBusyS !== undefined && seg.start.gatewayBusyS !== undefined
      ? Math.min(1, ((seg.end.gatewayBusyS - seg.start.gatewayBusyS) * 1000) / wallWin)
      : undefined
  const cpu =
    seg.end.gatewayCpuS !== undefined && seg.start.gatewayCpuS !== undefined
      ? ((seg.end.gatewayCpuS - seg.start.gatewayCpuS) * 1000) / wallWin
      : undefined
  return {
    perClass: {
      interactive: classMetrics(seg, everything, 'interactive', slos.interactive, scale),
      batch: classMetrics(seg, everything, 'batch', slos.batch, scale),
    },
    simBusy,
    preemptions: seg.end.sim.preemptions - seg.start.sim.preemptions,
    ...(gw !== undefined ? { gatewayBusy: gw } : {}),
    ...(cpu !== undefined ? { gatewayCpu: cpu } : {}),
    ...(seg.end.gatewayLoopP99Ms !== undefined ? { gatewayLoopP99Ms: seg.end.gatewayLoopP99Ms } : {}),
    lagP99Ms: seg.lagP99Ms,
    sendLagP99Ms: seg.sendLagP99Ms,
    clientLoopP99Ms: seg.clientLoopP99Ms,
    controlP99Ms: seg.controlP99Ms,
    snapshots: { start: seg.start, end: seg.end },
  }
}

/** One line on a segment's outcome, for the progress log. */
export function segmentSummary(m: SegmentMetrics): string {
  const i = m.perClass.interactive
  const tail = `batch ${m.perClass.batch.throughputTokS.toFixed(0)} tok/s; sim busy ${(m.simBusy * 100).toFixed(0)}%`
  if (i.offered === 0) return tail
  return (
    `interactive goodput ${i.goodputRps.toFixed(2)} req/s (TTFT-only ${i.ttftGoodputRps.toFixed(2)}), ` +
    `attainment ${(i.attainmentOffered * 100).toFixed(0)}% of offered / ${(i.attainmentAdmitted * 100).toFixed(0)}% of admitted, ` +
    `TTFT p99 ${i.ttft.p99.toFixed(0)} ms, TPOT p50 ${i.tpot.p50.toFixed(0)} ms; ${tail}`
  )
}
