/** The markdown summary of a bench run (printed at the end, and written as summary.md). */
import type { LoopDelay } from './bench-run.js'
import type { BenchSummary, GroupStats } from './bench-summary.js'
import { fmt, percentile, Report, sorted } from './report.js'
import type { SloSpec } from './workload-schema.js'

export interface RunInfo {
  readonly target: string
  readonly model: string
  readonly workload: string
  readonly seed: number
  readonly runTag: string
  /** "open loop, poisson at 4 req/s" */
  readonly load: string
  /** "for 30 s" or "200 requests" */
  readonly limit: string
  readonly startedAt: string
  readonly sent: number
  readonly sendingS: number
  readonly loopDelay: LoopDelay
  readonly sendLagMs: readonly number[]
  /** The client's CPU over the run, as a share of one core. */
  readonly cpuShare: number
}

/** Event-loop delay (p99) over which the client's own timing is named as suspect. */
export const LOOP_DELAY_WARN_MS = 10

const pct = (v: number) => (Number.isFinite(v) ? `${(v * 100).toFixed(1)}%` : 'n/a')
const ms = (v: number) => fmt(v, v >= 100 ? 0 : 1)

export function sloText(slo: SloSpec | undefined): string {
  const parts: string[] = []
  if (slo?.ttft_ms !== undefined) parts.push(`TTFT ${slo.ttft_ms} ms`)
  if (slo?.tpot_ms !== undefined) parts.push(`TPOT ${slo.tpot_ms} ms`)
  if (slo?.e2e_ms !== undefined) parts.push(`E2E ${slo.e2e_ms} ms`)
  return parts.length === 0 ? 'none' : parts.join(', ')
}

/** A warning when the client's event loop was late enough to distort its times; '' when not. */
export function loopWarning(d: LoopDelay): string {
  if (d.p99Ms <= LOOP_DELAY_WARN_MS) return ''
  return `**Warning**: the client's event loop was late by ${fmt(d.p99Ms, 1)} ms at P99 (max ${fmt(d.maxMs, 0)} ms): its times include that much of its own delay. Run it on a less busy machine, or at a lower rate.`
}

function latencyRow(name: string, g: GroupStats): (string | number)[] {
  const q = (s: GroupStats['ttftMs']) => [ms(s.p50), ms(s.p90), ms(s.p99)]
  return [name, g.ok, ...q(g.ttftMs), ...q(g.tpotMs), ...q(g.itlMs), ...q(g.e2eMs)]
}

export function benchMarkdown(info: RunInfo, s: BenchSummary, slos: ReadonlyMap<string, SloSpec>): string {
  const r = new Report(false)
  const lag = sorted(info.sendLagMs)
  r.heading(`slo-gateway bench: ${info.workload}`, 1)
  r.paragraph(
    [
      `- Target: ${info.target} (model ${info.model}); started ${info.startedAt}; seed ${info.seed}, run tag ${info.runTag}`,
      `- Load: ${info.load}, ${info.limit}: ${info.sent} requests sent in ${fmt(info.sendingS, 1)} s; goodput is per the run's ${fmt(s.durationS, 1)} s (first send to last answer)`,
      `- Client: ${pct(info.cpuShare)} of one core; event-loop delay P50 ${fmt(info.loopDelay.p50Ms, 1)} ms, P99 ${fmt(info.loopDelay.p99Ms, 1)} ms, max ${fmt(info.loopDelay.maxMs, 1)} ms` +
        (lag.length > 0
          ? `; sends late against their schedule P50 ${fmt(percentile(lag, 50), 1)} ms, P99 ${fmt(percentile(lag, 99), 1)} ms`
          : ''),
    ].join('\n'),
  )
  const warning = loopWarning(info.loopDelay)
  if (warning !== '') r.paragraph(warning)

  r.heading('Latency by class (ms, requests that succeeded)')
  r.table(
    ['class', 'ok', ...['TTFT', 'TPOT', 'ITL', 'E2E'].flatMap((m) => [`${m} P50`, `${m} P90`, `${m} P99`])],
    s.classes.map((c) => latencyRow(c.class, c)),
  )

  r.heading('Goodput and SLO attainment by class')
  r.table(
    [
      'class',
      'SLO',
      'offered',
      'admitted',
      'good',
      'attainment (offered)',
      'attainment (admitted)',
      'goodput req/s',
      'goodput tok/s',
      'throughput tok/s',
      'rejected',
      'degraded',
      'failed',
    ],
    s.classes.map((c) => [
      c.class,
      c.class === 'all' ? 'each its own' : sloText(slos.get(c.class)),
      c.offered,
      c.admitted,
      c.good,
      pct(c.attainmentOffered),
      pct(c.attainmentAdmitted),
      fmt(c.goodputRps, 2),
      fmt(c.goodputTps, 0),
      fmt(c.throughputTps, 0),
      pct(c.rejectionRate),
      pct(c.degradationRate),
      c.failed,
    ]),
  )

  r.heading('Refusals and failures')
  if (s.reasons.length === 0) r.paragraph('None: every request succeeded.')
  else
    r.table(
      [
        'class',
        'kind',
        'reason',
        'count',
        'of offered',
        'answer time P50 ms',
        'P99 ms',
        'retry-after P50 ms',
      ],
      s.reasons.map((x) => [
        x.class,
        x.kind,
        x.reason,
        x.count,
        pct(x.rate),
        ms(x.latencyMs.p50),
        ms(x.latencyMs.p99),
        x.retryAfterMs.count === 0 ? '' : ms(x.retryAfterMs.p50),
      ]),
    )

  r.heading('By prompt length (tokens sent)')
  r.table(
    [
      'class',
      'prompt tokens',
      'offered',
      'good',
      'attainment (offered)',
      'attainment (admitted)',
      'rejected',
      'TTFT P50',
      'TTFT P99',
      'TPOT P50',
    ],
    s.buckets.map((b) => [
      b.class,
      b.bucket,
      b.offered,
      b.good,
      pct(b.attainmentOffered),
      pct(b.attainmentAdmitted),
      pct(b.rejectionRate),
      ms(b.ttftMs.p50),
      ms(b.ttftMs.p99),
      ms(b.tpotMs.p50),
    ]),
  )

  r.heading("The gateway's predicted TTFT against the measured")
  if (s.predictions.length === 0) r.paragraph('No response carried `x-gateway-predicted-ttft-ms`.')
  else
    r.table(
      [
        'class',
        'requests',
        'predicted P50 ms',
        'measured P50 ms',
        '|error| P50 ms',
        '|error| P90 ms',
        '|error| P50',
        '|error| P90',
        'mean error ms',
      ],
      s.predictions.map((p) => [
        p.class,
        p.n,
        ms(p.predictedMs.p50),
        ms(p.measuredMs.p50),
        ms(p.absErrorMs.p50),
        ms(p.absErrorMs.p90),
        pct(p.absErrorRatio.p50),
        pct(p.absErrorRatio.p90),
        (p.meanSignedErrorMs >= 0 ? '+' : '') + ms(p.meanSignedErrorMs),
      ]),
    )
  return r.toString()
}
