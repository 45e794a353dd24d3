/**
 * What a run's records add up to, by the definitions of docs (design.md, "Definitions"):
 *
 * - ok: status 200 and a stream that ended with [DONE]; admitted: status 200 (a stream that
 *   broke midway was admitted and failed); refused: 429 or 503 (the overload contract);
 *   failed: anything else (another status, no answer, a timeout, a broken stream).
 * - good: ok and within every objective its class sets (TTFT, TPOT, E2E; a one-token answer
 *   has no TPOT and passes it). Goodput = good requests (and their output tokens) per second
 *   of the run (first send to last answer, as vLLM's benchmark duration).
 * - attainment = good / offered (refusals and failures are misses), and good / admitted.
 * - degradation rate = admitted with `x-gateway-degraded` / admitted.
 */
import { PROMPT_LENGTH_BUCKETS, promptLengthBucket } from '../telemetry/length-buckets.js'
import type { BenchRecord } from './bench-run.js'
import { ratio, type Summary, summarize } from './report.js'
import type { SloSpec } from './workload-schema.js'

export type Outcome = 'ok' | 'refused' | 'failed'

export function outcomeOf(r: BenchRecord): Outcome {
  if (r.status === 200 && r.error === undefined) return 'ok'
  if (r.status === 429 || r.status === 503) return 'refused'
  return 'failed'
}

export function isGood(r: BenchRecord, slo: SloSpec): boolean {
  if (outcomeOf(r) !== 'ok') return false
  if (slo.ttft_ms !== undefined && !(r.ttftMs !== undefined && r.ttftMs <= slo.ttft_ms)) return false
  if (slo.tpot_ms !== undefined && r.tpotMs !== undefined && r.tpotMs > slo.tpot_ms) return false
  if (slo.e2e_ms !== undefined && !(r.e2eMs !== undefined && r.e2eMs <= slo.e2e_ms)) return false
  return true
}

/** Why it was refused (the gateway's reason, else the body's code) or why it failed. */
export function reasonOf(r: BenchRecord): string {
  if (outcomeOf(r) === 'refused')
    return r.headers['x-gateway-reject-reason'] ?? r.errorCode ?? `http_${r.status}`
  if (r.error !== undefined) return r.error
  return r.errorCode === undefined ? `http_${r.status}` : `http_${r.status}:${r.errorCode}`
}

/** The wait a refusal asked for, ms (`retry-after-ms`, else `retry-after` in seconds). */
export function retryAfterMs(r: BenchRecord): number | undefined {
  const ms = Number(r.headers['retry-after-ms'])
  if (Number.isFinite(ms) && r.headers['retry-after-ms'] !== undefined) return ms
  const s = Number(r.headers['retry-after'])
  return r.headers['retry-after'] !== undefined && Number.isFinite(s) ? s * 1000 : undefined
}

export interface GroupStats {
  readonly offered: number
  readonly admitted: number
  readonly ok: number
  readonly good: number
  readonly refused: number
  readonly failed: number
  readonly degraded: number
  readonly attainmentOffered: number
  readonly attainmentAdmitted: number
  readonly rejectionRate: number
  readonly degradationRate: number
  readonly goodputRps: number
  readonly goodputTps: number
  /** Output tokens of every ok request per second. */
  readonly throughputTps: number
  readonly ttftMs: Summary
  readonly tpotMs: Summary
  readonly itlMs: Summary
  readonly e2eMs: Summary
}

export interface ReasonStats {
  readonly class: string
  readonly kind: 'refused' | 'failed'
  readonly reason: string
  readonly count: number
  /** count / offered of the class. */
  readonly rate: number
  /** How long the answer took, ms. */
  readonly latencyMs: Summary
  readonly retryAfterMs: Summary
}

export interface PredictionStats {
  readonly class: string
  readonly n: number
  readonly predictedMs: Summary
  readonly measuredMs: Summary
  /** |predicted - measured|, ms. */
  readonly absErrorMs: Summary
  /** |predicted - measured| / measured. */
  readonly absErrorRatio: Summary
  /** Mean of predicted - measured (positive: it predicted too long), ms. */
  readonly meanSignedErrorMs: number
}

export interface BenchSummary {
  readonly durationS: number
  /** Per class, then `all`. */
  readonly classes: readonly ({ readonly class: string } & GroupStats)[]
  readonly buckets: readonly ({ readonly class: string; readonly bucket: string } & GroupStats)[]
  readonly reasons: readonly ReasonStats[]
  readonly predictions: readonly PredictionStats[]
}

const tokensOf = (r: BenchRecord) => r.outputTokens ?? r.chunks

export function groupStats(
  records: readonly BenchRecord[],
  slo: (r: BenchRecord) => SloSpec,
  durationS: number,
) {
  const ok = records.filter((r) => outcomeOf(r) === 'ok')
  const good = ok.filter((r) => isGood(r, slo(r)))
  const admitted = records.filter((r) => r.status === 200).length
  const refused = records.filter((r) => outcomeOf(r) === 'refused').length
  const degraded = records.filter(
    (r) => r.status === 200 && (r.headers['x-gateway-degraded'] ?? '') !== '',
  ).length
  const sumTokens = (rs: readonly BenchRecord[]) => rs.reduce((s, r) => s + tokensOf(r), 0)
  const defined = (v: (number | undefined)[]) => v.filter((x): x is number => x !== undefined)
  return {
    offered: records.length,
    admitted,
    ok: ok.length,
    good: good.length,
    refused,
    failed: records.length - ok.length - refused,
    degraded,
    attainmentOffered: ratio(good.length, records.length),
    attainmentAdmitted: ratio(good.length, admitted),
    rejectionRate: ratio(refused, records.length),
    degradationRate: ratio(degraded, admitted),
    goodputRps: ratio(good.length, durationS),
    goodputTps: ratio(sumTokens(good), durationS),
    throughputTps: ratio(sumTokens(ok), durationS),
    ttftMs: summarize(defined(ok.map((r) => r.ttftMs))),
    tpotMs: summarize(defined(ok.map((r) => r.tpotMs))),
    itlMs: summarize(ok.flatMap((r) => r.itlMs)),
    e2eMs: summarize(defined(ok.map((r) => r.e2eMs))),
  } satisfies GroupStats
}

function byKey<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>()
  for (const t of items) {
    const k = key(t)
    const list = m.get(k)
    if (list === undefined) m.set(k, [t])
    else list.push(t)
  }
  return m
}

function predictionStats(cls: string, records: readonly BenchRecord[]): PredictionStats | undefined {
  const pairs = records.flatMap((r) => {
    const p = Number(r.headers['x-gateway-predicted-ttft-ms'])
    return r.headers['x-gateway-predicted-ttft-ms'] !== undefined &&
      Number.isFinite(p) &&
      r.ttftMs !== undefined
      ? [{ p, m: r.ttftMs }]
      : []
  })
  if (pairs.length === 0) return undefined
  return {
    class: cls,
    n: pairs.length,
    predictedMs: summarize(pairs.map((x) => x.p)),
    measuredMs: summarize(pairs.map((x) => x.m)),
    absErrorMs: summarize(pairs.map((x) => Math.abs(x.p - x.m))),
    absErrorRatio: summarize(pairs.map((x) => ratio(Math.abs(x.p - x.m), x.m))),
    meanSignedErrorMs: pairs.reduce((s, x) => s + x.p - x.m, 0) / pairs.length,
  }
}

/** Everything the report shows; `slos` by class name, `order` the classes as the workload lists them. */
export function summarizeRun(
  records: readonly BenchRecord[],
  slos: ReadonlyMap<string, SloSpec>,
  elapsedMs: number,
): BenchSummary {
  const durationS = elapsedMs / 1000
  const slo = (r: BenchRecord) => slos.get(r.class) ?? {}
  const byClass = byKey(records, (r) => r.class)
  const names = [...slos.keys()].filter((c) => byClass.has(c))
  const classes = names.map((c) => ({ class: c, ...groupStats(byClass.get(c)!, slo, durationS) }))
  if (names.length > 1) classes.push({ class: 'all', ...groupStats(records, slo, durationS) })
  const buckets = names.flatMap((c) => {
    const byBucket = byKey(byClass.get(c)!, (r) => promptLengthBucket(r.promptTokensSent))
    return PROMPT_LENGTH_BUCKETS.flatMap(({ label }) => {
      const rs = byBucket.get(label)
      return rs === undefined ? [] : [{ class: c, bucket: label, ...groupStats(rs, slo, durationS) }]
    })
  })
  const reasons = names.flatMap((c) => {
    const all = byClass.get(c)!
    const missed = all.filter((r) => outcomeOf(r) !== 'ok')
    return [...byKey(missed, (r) => `${outcomeOf(r)}\u0000${reasonOf(r)}`)].map(([key, rs]) => ({
      class: c,
      kind: key.startsWith('refused') ? ('refused' as const) : ('failed' as const),
      reason: key.slice(key.indexOf('\u0000') + 1),
      count: rs.length,
      rate: ratio(rs.length, all.length),
      latencyMs: summarize(rs.map((r) => r.latencyMs)),
      retryAfterMs: summarize(rs.map(retryAfterMs).filter((x): x is number => x !== undefined)),
    }))
  })
  const predictions = names.flatMap((c) => predictionStats(c, byClass.get(c)!) ?? [])
  return { durationS, classes, buckets, reasons, predictions }
}
