/**
 * What one plan run measured, judged as `slo-gateway bench` judges a run: a request is good
 * when it succeeded and met every objective its workload class sets (TTFT, TPOT, E2E);
 * attainment = good / offered (refusals and failures count as misses); goodput = good
 * requests per second of the run's arrivals.
 */
import { percentile, sorted } from '../../loadgen/report.js'
import type { SloSpec } from '../../loadgen/workload-schema.js'

export interface RequestOutcome {
  readonly className: string
  readonly status: 'ok' | 'refused' | 'failed'
  readonly reason?: string
  readonly ttftMs?: number
  readonly tpotMs?: number
  readonly e2eMs?: number
  readonly promptTokens: number
  readonly outputTokens: number
  readonly slo: SloSpec
}

export interface RunResult {
  /** Offered requests/s (all replicas). */
  readonly rate: number
  readonly offered: number
  readonly good: number
  readonly refused: number
  readonly failed: number
  /** good / offered, of the judged class (or every request). */
  readonly attainment: number
  /** Good requests/s and good tokens (prompt + output)/s, of every class. */
  readonly goodput: number
  readonly goodTokensPerS: number
  readonly goodOutputTokensPerS: number
  readonly ttftP99Ms: number
  readonly tpotP99Ms: number
  readonly refusedBy: Readonly<Record<string, number>>
  /** CPU time the run took, ms (wall clock of a synchronous run). */
  readonly cpuMs: number
  /** What admission learned of each replica's engine by the run's end (engine-facts.ts state()). */
  readonly engineFacts?: readonly object[]
}

/** bench-summary.ts's isGood, on an outcome: succeeded and met every objective it sets. */
export function isGoodOutcome(o: RequestOutcome): boolean {
  if (o.status !== 'ok') return false
  const slo = o.slo
  if (slo.ttft_ms !== undefined && !(o.ttftMs !== undefined && o.ttftMs <= slo.ttft_ms)) return false
  if (slo.tpot_ms !== undefined && o.tpotMs !== undefined && o.tpotMs > slo.tpot_ms) return false
  if (slo.e2e_ms !== undefined && !(o.e2eMs !== undefined && o.e2eMs <= slo.e2e_ms)) return false
  return true
}

export function summarizeOutcomes(
  outcomes: readonly RequestOutcome[],
  rate: number,
  durationMs: number,
  cpuMs: number,
  sloClass?: string,
): RunResult {
  let good = 0
  let judged = 0
  let judgedGood = 0
  let refused = 0
  let failed = 0
  let goodTokens = 0
  let goodOutput = 0
  const ttft: number[] = []
  const tpot: number[] = []
  const refusedBy: Record<string, number> = {}
  for (const o of outcomes) {
    const g = isGoodOutcome(o)
    if (g) {
      good++
      goodTokens += o.promptTokens + o.outputTokens
      goodOutput += o.outputTokens
    }
    if (sloClass === undefined || o.className === sloClass) {
      judged++
      if (g) judgedGood++
    }
    if (o.status === 'refused') {
      refused++
      const r = o.reason ?? 'refused'
      refusedBy[r] = (refusedBy[r] ?? 0) + 1
    } else if (o.status === 'failed') failed++
    else {
      if (o.ttftMs !== undefined) ttft.push(o.ttftMs)
      if (o.tpotMs !== undefined) tpot.push(o.tpotMs)
    }
  }
  const s = durationMs / 1000
  return {
    rate,
    offered: outcomes.length,
    good,
    refused,
    failed,
    attainment: judged === 0 ? Number.NaN : judgedGood / judged,
    goodput: good / s,
    goodTokensPerS: goodTokens / s,
    goodOutputTokensPerS: goodOutput / s,
    ttftP99Ms: percentile(sorted(ttft), 99),
    tpotP99Ms: percentile(sorted(tpot), 99),
    refusedBy,
    cpuMs,
  }
}
