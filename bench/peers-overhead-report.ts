/**
 * bench:peers:overhead's markdown: per body size, the medians over rounds of each target's
 * figures, the differences against the upstream directly (computed within each round, then
 * the median), and the headline: slo-gateway's saturation throughput against Portkey's.
 */
import { fmt, median, type Report, ratio } from '../src/loadgen/report.js'
import type { SizeStats } from './peers-measure.js'
import type { TargetKey } from './targets.js'

/** results.get(size).get(target) = one SizeStats per round. */
export type PeersResults = Map<number, Map<TargetKey, { label: string; rounds: SizeStats[] }>>

export const PEERS_ORDER: readonly TargetKey[] = [
  'direct',
  'nginx',
  'haproxy',
  'portkey',
  'node-floor',
  'gateway-all',
  'gateway-before',
]

const kb = (bytes: number) => `${Math.round(bytes / 1024)} KB`

type Pick = (s: SizeStats) => number

function med(rounds: readonly SizeStats[], f: Pick): number {
  return median(rounds.map(f))
}

/** Median over rounds of f(target) - f(direct) in the same round. */
function added(rounds: readonly SizeStats[], base: readonly SizeStats[] | undefined, f: Pick): number {
  if (base === undefined) return Number.NaN
  return median(rounds.map((r, i) => (base[i] === undefined ? Number.NaN : f(r) - f(base[i]))))
}

function ratioIn(a: readonly SizeStats[], b: readonly SizeStats[] | undefined, f: Pick): number {
  if (b === undefined) return Number.NaN
  return median(a.map((r, i) => (b[i] === undefined ? Number.NaN : ratio(f(r), f(b[i])))))
}

const us = (v: number) => (Number.isFinite(v) ? fmt(v, 0) : 'n/a')
const ms = (v: number) => (Number.isFinite(v) ? fmt(v, 2) : 'n/a')
const plus = (v: number) => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${fmt(v, 2)}` : 'n/a')

export interface Headline {
  readonly size: number
  readonly streamed: boolean
  readonly ratio: number
  readonly met: boolean
}

/** slo-gateway (all features) / Portkey saturation throughput, per size, plain and streamed. */
export function headlines(res: PeersResults): Headline[] {
  const out: Headline[] = []
  for (const [size, byTarget] of res) {
    const gw = byTarget.get('gateway-all')?.rounds
    const pk = byTarget.get('portkey')?.rounds
    if (gw === undefined || pk === undefined) continue
    for (const streamed of [false, true]) {
      const r = ratioIn(gw, pk, streamed ? (s) => s.streamsPerS : (s) => s.satRps)
      out.push({ size, streamed, ratio: r, met: r >= 5 })
    }
  }
  return out
}

export function writePeersResults(
  report: Report,
  res: PeersResults,
  rates: readonly number[],
  streamRate: number,
): void {
  const heads = headlines(res)
  report.heading('Headline: saturation throughput, slo-gateway (all features on) / Portkey')
  if (heads.length === 0) report.paragraph('Not measured: slo-gateway or Portkey was not among the targets.')
  else
    report.table(
      ['body', 'kind', 'ratio (median of rounds)', 'target >= 5x'],
      heads.map((h) => [
        kb(h.size),
        h.streamed ? 'streamed' : 'non-streamed',
        `${fmt(h.ratio, 2)}x`,
        h.met ? 'met' : 'MISSED',
      ]),
    )
  for (const [size, byTarget] of res) {
    const keys = PEERS_ORDER.filter((k) => byTarget.has(k))
    const base = byTarget.get('direct')?.rounds
    report.heading(`Request body ${kb(size)}: non-streamed`)
    report.table(
      [
        'target',
        'req/s at saturation',
        'p50 ms',
        'p99 ms',
        'CPU µs/req',
        ...rates.flatMap((r) => [`p50 @${r}/s`, `p99 @${r}/s`, `added p50 @${r}/s`, `CPU µs/req @${r}/s`]),
        'failed',
      ],
      keys.map((k) => {
        const t = byTarget.get(k)!
        const rs = t.rounds
        return [
          t.label,
          fmt(
            med(rs, (s) => s.satRps),
            0,
          ),
          ms(med(rs, (s) => s.satP50)),
          ms(med(rs, (s) => s.satP99)),
          us(med(rs, (s) => s.cpuUsPerReq)),
          ...rates.flatMap((_, i) => {
            const f: Pick = (s) => s.fixed[i]?.p50 ?? Number.NaN
            return [
              ms(med(rs, f)),
              ms(med(rs, (s) => s.fixed[i]?.p99 ?? Number.NaN)),
              k === 'direct' ? '' : plus(added(rs, base, f)),
              us(med(rs, (s) => s.fixed[i]?.cpuUs ?? Number.NaN)),
            ]
          }),
          rs.reduce((a, s) => a + s.failed, 0),
        ]
      }),
    )
    report.heading(`Request body ${kb(size)}: streamed`)
    report.table(
      [
        'target',
        'streams/s at saturation',
        'CPU µs/stream',
        `first chunk p50 ms @${streamRate}/s`,
        'p99 ms',
        'added first chunk p50 ms',
        'per-chunk delay p50 ms',
        'p99 ms',
        'added per chunk p50 ms',
      ],
      keys.map((k) => {
        const t = byTarget.get(k)!
        const rs = t.rounds
        const direct = k === 'direct'
        return [
          t.label,
          fmt(
            med(rs, (s) => s.streamsPerS),
            0,
          ),
          us(med(rs, (s) => s.cpuUsPerStream)),
          ms(med(rs, (s) => s.ttfcP50)),
          ms(med(rs, (s) => s.ttfcP99)),
          direct ? '' : plus(added(rs, base, (s) => s.ttfcP50)),
          ms(med(rs, (s) => s.chunkP50)),
          ms(med(rs, (s) => s.chunkP99)),
          direct ? '' : plus(added(rs, base, (s) => s.chunkP50)),
        ]
      }),
    )
  }
}
