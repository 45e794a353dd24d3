/**
 * The periodic one-line summary per class (1-minute window), as logged every
 * `telemetry.summary_interval_ms`: what an operator tailing the log wants to see first.
 */
import type { RollingWindows } from './rolling-windows.js'
import { WINDOWS } from './rolling-windows.js'

export interface SummaryLine {
  readonly class: string
  readonly window: '1m'
  readonly offered: number
  readonly good: number
  readonly missed: number
  readonly client_errors: number
  readonly goodput_rps: number
  readonly goodput_tps: number
  readonly attainment: number | null
  readonly attainment_admitted: number | null
  readonly ttft_p50_ms: number | null
  readonly ttft_p99_ms: number | null
  readonly tpot_p50_ms: number | null
  readonly tpot_p99_ms: number | null
  readonly rejection_rate: number | null
  readonly degradation_rate: number | null
  readonly error_rate: number | null
  readonly cost_per_1k_tokens: number | null
}

const r3 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000) / 1000)

export function summaryLines(windows: RollingWindows, now: number): SummaryLine[] {
  return windows.classes().map((cls) => {
    const s = windows.of(cls).stats(now, WINDOWS['1m'])
    return {
      class: cls,
      window: '1m',
      offered: s.offered,
      good: s.good,
      missed: s.missed,
      client_errors: s.clientErrors,
      goodput_rps: r3(s.goodputRps) ?? 0,
      goodput_tps: r3(s.goodputTokensPerS) ?? 0,
      attainment: r3(s.attainment),
      attainment_admitted: r3(s.attainmentAdmitted),
      ttft_p50_ms: s.ttftMs.p50,
      ttft_p99_ms: s.ttftMs.p99,
      tpot_p50_ms: s.tpotMs.p50,
      tpot_p99_ms: s.tpotMs.p99,
      rejection_rate: r3(s.rejectionRate),
      degradation_rate: r3(s.degradationRate),
      error_rate: r3(s.errorRate),
      cost_per_1k_tokens: s.costPer1kTokens === null ? null : Math.round(s.costPer1kTokens * 1e6) / 1e6,
    }
  })
}
