/**
 * The overhead bench's markdown: per-target medians over rounds, and ratios and
 * differences computed within each round (side by side) and then taken as the median.
 */

import { fmt, fmtDelta, median, type Report, ratio } from '../src/loadgen/report.js'
import type { Profile, Results, RoundResult } from './measure.js'
import type { TargetKey } from './targets.js'

export type { Results }

type Pick = (r: RoundResult) => number
type Pair = (t: RoundResult, b: RoundResult) => number

const ORDER: readonly TargetKey[] = ['direct', 'gateway', 'gateway-off', 'nginx', 'haproxy']

/** Read-only queries over the results. */
class View {
  constructor(private readonly res: Results) {}

  has(k: TargetKey): boolean {
    return this.res.has(k)
  }

  keys(): TargetKey[] {
    return ORDER.filter((k) => this.res.has(k))
  }

  label(k: TargetKey): string {
    return this.res.get(k)?.label ?? k
  }

  rounds(k: TargetKey): RoundResult[] {
    return this.res.get(k)?.rounds ?? []
  }

  /** Median over rounds. */
  med(k: TargetKey, f: Pick): number {
    return median(this.rounds(k).map(f))
  }

  /** Median over rounds of f(target's round, base's same round). */
  pair(k: TargetKey, base: TargetKey, f: Pair): number {
    const b = this.rounds(base)
    return median(this.rounds(k).map((r, i) => (b[i] === undefined ? Number.NaN : f(r, b[i]))))
  }

  sum(k: TargetKey, f: Pick): number {
    return this.rounds(k).reduce((a, r) => a + f(r), 0)
  }
}

export interface Verdict {
  readonly what: string
  readonly target: string
  readonly measured: number
  readonly unit: '%' | 'ms' | 'x'
  readonly met: boolean
}

const diff =
  (f: Pick): Pair =>
  (t, b) =>
    f(t) - f(b)
const rel =
  (f: Pick): Pair =>
  (t, b) =>
    100 * (ratio(f(t), f(b)) - 1)

export function verdicts(res: Results): Verdict[] {
  const v = new View(res)
  if (!v.has('gateway')) return []
  const gw = (base: TargetKey, f: Pair) => v.pair('gateway', base, f)
  const specs: [string, string, Verdict['unit'], number, (m: number) => boolean][] = [
    [
      'added latency p50 at 1,000 req/s',
      '<= 1 ms',
      'ms',
      gw(
        'direct',
        diff((r) => r.open.p50),
      ),
      (m) => m <= 1,
    ],
    [
      'added latency p99 at 1,000 req/s',
      '<= 3 ms',
      'ms',
      gw(
        'direct',
        diff((r) => r.open.p99),
      ),
      (m) => m <= 3,
    ],
    [
      'added delay per SSE chunk, p50',
      '< 0.5 ms',
      'ms',
      gw(
        'direct',
        diff((r) => r.stream.delayP50),
      ),
      (m) => m < 0.5,
    ],
    [
      'added delay per SSE chunk, mean',
      '< 0.5 ms',
      'ms',
      gw(
        'direct',
        diff((r) => r.stream.delayMean),
      ),
      (m) => m < 0.5,
    ],
  ]
  if (v.has('nginx')) {
    const cpu = gw('nginx', (t, b) => ratio(t.open.cpuUs, b.open.cpuUs))
    specs.push(['CPU per request vs nginx at 1,000 req/s', '<= 2x', 'x', cpu, (m) => m <= 2])
  }
  if (v.has('gateway-off')) {
    const rps = gw(
      'gateway-off',
      rel((r) => r.closed.rps),
    )
    const implied = gw('gateway-off', (t, b) => 100 * (ratio(b.closed.cpuUs, t.closed.cpuUs) - 1))
    specs.push(['req/s, telemetry on vs off (closed loop)', '> -5 %', '%', rps, (m) => m > -5])
    specs.push(['req/s implied by CPU/req, on vs off (closed loop)', '> -5 %', '%', implied, (m) => m > -5])
  }
  return specs.map(([what, target, unit, measured, ok]) => ({
    what,
    target,
    unit,
    measured,
    met: Number.isFinite(measured) && ok(measured),
  }))
}

type Column = readonly [head: string, cell: (k: TargetKey) => string]

function table(report: Report, keys: readonly TargetKey[], cols: readonly Column[]): void {
  report.table(
    cols.map(([h]) => h),
    keys.map((k) => cols.map(([, cell]) => cell(k))),
  )
}

export function writeResults(report: Report, res: Results, p: Profile): void {
  const v = new View(res)
  const keys = v.keys()
  const val = (f: Pick, digits: number) => (k: TargetKey) => fmt(v.med(k, f), digits)
  const added = (f: Pick) => (k: TargetKey) =>
    k === 'direct' ? '' : fmtDelta(v.pair(k, 'direct', diff(f)), 3)
  const share = (f: Pick) => (k: TargetKey) => `${fmt(100 * v.med(k, f), 0)}%`
  const noise = (f: (r: RoundResult) => { others: number; othersClient: number }) => (k: TargetKey) =>
    `${fmt(100 * v.med(k, (r) => f(r).othersClient), 0)}% / ${fmt(100 * v.med(k, (r) => f(r).others), 0)}%`
  const count = (f: Pick) => (k: TargetKey) => String(v.sum(k, f))
  const label: Column = ['target', (k) => v.label(k)]
  const vsDirect = (k: TargetKey) =>
    `${fmt(v.pair(k, 'direct', (t, b) => ratio(t.closed.rps, b.closed.rps)))}x`

  report.heading(
    `Non-streaming, closed loop, concurrency ${p.concurrency} (${p.closedMs / 1000} s per slice)`,
    3,
  )
  table(report, keys, [
    label,
    ['req/s', val((r) => r.closed.rps, 0)],
    ['p50 ms', val((r) => r.closed.p50, 3)],
    ['p99 ms', val((r) => r.closed.p99, 3)],
    ['req/s vs direct', vsDirect],
    ['proxy CPU µs/req', val((r) => r.closed.cpuUs, 1)],
    ['proxy CPU busy', (k) => (k === 'direct' ? 'n/a' : share((r) => r.closed.busy)(k))],
    ['others on core 0 / 1', noise((r) => r.closed)],
    ['failed', count((r) => r.closed.failed)],
  ])

  report.heading(`Non-streaming, open loop at ${p.ratePerS} req/s (${p.openMs / 1000} s per slice)`, 3)
  table(report, keys, [
    label,
    ['p50 ms', val((r) => r.open.p50, 3)],
    ['p99 ms', val((r) => r.open.p99, 3)],
    ['added p50 ms', added((r) => r.open.p50)],
    ['added p99 ms', added((r) => r.open.p99)],
    ['proxy CPU µs/req', val((r) => r.open.cpuUs, 1)],
    ['others on core 0 / 1', noise((r) => r.open)],
    ['client lag p99 ms', val((r) => r.open.lagP99, 2)],
    ['failed', count((r) => r.open.failed)],
  ])

  const shape = `${p.chunks} chunks ${p.intervalMs} ms apart`
  report.heading(
    `SSE streams: ${p.streamConcurrency} concurrent, ${shape} (${p.streamMs / 1000} s per slice)`,
    3,
  )
  report.paragraph(
    "Delay = the client's arrival time of a chunk minus the send time the upstream stamped in it " +
      '(CLOCK_MONOTONIC, same machine). Added = proxied minus direct, same round.',
  )
  table(report, keys, [
    label,
    ['delay p50 ms', val((r) => r.stream.delayP50, 3)],
    ['delay p99 ms', val((r) => r.stream.delayP99, 3)],
    ['delay mean ms', val((r) => r.stream.delayMean, 3)],
    ['added p50 ms', added((r) => r.stream.delayP50)],
    ['added p99 ms', added((r) => r.stream.delayP99)],
    ['added mean ms', added((r) => r.stream.delayMean)],
    ['chunks/stream', val((r) => r.stream.eventsPerStream, 0)],
    ['proxy CPU µs/chunk', val((r) => r.stream.cpuUsPerChunk, 1)],
    ['others on core 0 / 1', noise((r) => r.stream)],
    ['streams', count((r) => r.stream.streams)],
    ['failed', count((r) => r.stream.failed)],
  ])

  const peers = (['nginx', 'haproxy'] as const).filter((k) => v.has(k))
  if (v.has('gateway') && peers.length > 0) {
    report.heading('CPU per proxied request: the gateway against its peers', 3)
    const times = (f: Pick) => (k: TargetKey) => `${fmt(v.pair('gateway', k, (t, b) => ratio(f(t), f(b))))}x`
    table(report, peers, [
      ['peer', (k) => v.label(k)],
      ['peer µs/req @1k/s', val((r) => r.open.cpuUs, 1)],
      ['gateway / peer @1k/s', times((r) => r.open.cpuUs)],
      ['peer µs/req closed', val((r) => r.closed.cpuUs, 1)],
      ['gateway / peer closed', times((r) => r.closed.cpuUs)],
    ])
  }

  if (v.has('gateway') && v.has('gateway-off')) {
    report.heading('Telemetry on versus off', 3)
    report.paragraph(
      'Last column: telemetry on relative to off, computed per round, median over rounds. In the closed ' +
        'loop the gateway is bound by its core, so its req/s is about 1 / (CPU per request); with other ' +
        'work on that core, the CPU-based figure is the steadier of the two.',
    )
    const onOff = (f: Pair) => v.pair('gateway', 'gateway-off', f)
    const row = (name: string, f: Pick, digits: number, change: string) => [
      name,
      fmt(v.med('gateway', f), digits),
      fmt(v.med('gateway-off', f), digits),
      change,
    ]
    const pct = (f: Pick) => `${fmtDelta(onOff(rel(f)), 1)}%`
    const ms = (f: Pick) => `${fmtDelta(onOff(diff(f)), 3)} ms`
    report.table(
      ['measure', 'telemetry on', 'telemetry off', 'on vs off'],
      [
        row(
          'closed-loop req/s',
          (r) => r.closed.rps,
          0,
          pct((r) => r.closed.rps),
        ),
        row(
          'closed-loop CPU µs/req',
          (r) => r.closed.cpuUs,
          1,
          pct((r) => r.closed.cpuUs),
        ),
        row(
          'CPU µs/req @1k/s',
          (r) => r.open.cpuUs,
          1,
          pct((r) => r.open.cpuUs),
        ),
        row(
          'p50 ms @1k/s',
          (r) => r.open.p50,
          3,
          ms((r) => r.open.p50),
        ),
        row(
          'p99 ms @1k/s',
          (r) => r.open.p99,
          3,
          ms((r) => r.open.p99),
        ),
      ],
    )
  }

  const vs = verdicts(res)
  if (vs.length > 0) {
    report.heading('Against the targets', 3)
    const shown = (x: Verdict) =>
      `${x.unit === '%' ? fmtDelta(x.measured, 1) : fmt(x.measured, x.unit === 'ms' ? 3 : 2)} ${x.unit}`
    report.table(
      ['what', 'target', 'measured', 'verdict'],
      vs.map((x) => [x.what, x.target, shown(x), x.met ? 'met' : 'MISSED']),
    )
  }

  report.heading('Per round (spread)', 3)
  const rows: string[][] = []
  const direct = v.rounds('direct')
  for (const k of keys.filter((x) => x !== 'direct')) {
    v.rounds(k).forEach((r, i) => {
      const b = direct[i]
      const d = (f: Pick) => fmtDelta(b === undefined ? Number.NaN : f(r) - f(b), 3)
      rows.push([
        v.label(k),
        String(i + 1),
        `${fmt(ratio(r.closed.rps, b?.closed.rps ?? Number.NaN))}x`,
        d((x) => x.open.p50),
        d((x) => x.open.p99),
        d((x) => x.stream.delayP50),
        fmt(r.open.cpuUs, 1),
        [r.closed, r.open, r.stream]
          .map((x) => `${fmt(100 * x.othersClient, 0)}/${fmt(100 * x.others, 0)}`)
          .join(', '),
      ])
    })
  }
  report.table(
    [
      'target',
      'round',
      'req/s vs direct',
      'added p50 ms @1k/s',
      'added p99 ms @1k/s',
      'added chunk p50 ms',
      'CPU µs/req @1k/s',
      'others % on core 0/1: closed, open, sse',
    ],
    rows,
  )
}
