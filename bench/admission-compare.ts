/**
 * The gateway against its yardsticks, per workload and load level: interactive goodput
 * (requests/s and tokens/s) directly, through nginx, through HAProxy at each maxconn and the
 * best of them at that level, and through the gateway, with the ratio gateway ÷ best HAProxy;
 * then, per path, what admission quality the client saw.
 */
import { fmt, type Report } from '../src/loadgen/report.js'
import type { SegmentMetrics } from './admission-metrics.js'
import { longestVsShortest } from './admission-quality.js'
import { type LevelResult, pct } from './admission-report.js'

export const HAPROXY_PREFIX = 'haproxy-'

/** The key of HAProxy at maxconn `n`. */
export const haproxyKey = (n: number) => `${HAPROXY_PREFIX}${n}`

export function pathLabel(key: string): string {
  if (key.startsWith(HAPROXY_PREFIX)) return `HAProxy maxconn ${key.slice(HAPROXY_PREFIX.length)}`
  return key === 'gateway' ? 'slo-gateway' : key
}

export interface Best {
  readonly key: string
  readonly goodputRps: number
  readonly goodputTokS: number
}

/** The HAProxy setting with the highest interactive goodput (req/s; ties: the smaller maxconn). */
export function bestHaproxy(runs: LevelResult['runs']): Best | undefined {
  let best: Best | undefined
  for (const [key, m] of Object.entries(runs)) {
    if (!key.startsWith(HAPROXY_PREFIX) || m === undefined) continue
    const i = m.perClass.interactive
    if (best === undefined || i.goodputRps > best.goodputRps)
      best = { key, goodputRps: i.goodputRps, goodputTokS: i.goodputTokS }
  }
  return best
}

/** gateway ÷ best HAProxy, interactive goodput in req/s (∞ when HAProxy got none and the gateway some). */
export function ratioToBest(l: LevelResult): number {
  const g = l.runs.gateway?.perClass.interactive.goodputRps
  const b = bestHaproxy(l.runs)
  if (g === undefined || b === undefined) return Number.NaN
  if (b.goodputRps === 0) return g === 0 ? Number.NaN : Number.POSITIVE_INFINITY
  return g / b.goodputRps
}

const ratioText = (r: number) => (Number.isFinite(r) ? `${fmt(r, 2)}×` : r > 0 ? '∞' : 'n/a')

function cell(m: SegmentMetrics | undefined): string {
  if (m === undefined) return ''
  const i = m.perClass.interactive
  return `${fmt(i.goodputRps, 2)} · ${fmt(i.goodputTokS, 0)}`
}

/** Every path key present at any level, in first-seen order. */
export function pathKeys(levels: readonly LevelResult[]): string[] {
  const keys: string[] = []
  for (const l of levels) for (const k of Object.keys(l.runs)) if (!keys.includes(k)) keys.push(k)
  return keys
}

export function goodputTable(report: Report, levels: readonly LevelResult[]): void {
  const keys = pathKeys(levels)
  const rows: string[][] = keys.map((k) => [pathLabel(k), ...levels.map((l) => cell(l.runs[k]))])
  if (keys.some((k) => k.startsWith(HAPROXY_PREFIX)))
    rows.push([
      '**best HAProxy**',
      ...levels.map((l) => {
        const b = bestHaproxy(l.runs)
        return b === undefined
          ? ''
          : `${fmt(b.goodputRps, 2)} · ${fmt(b.goodputTokS, 0)} (${pathLabel(b.key)})`
      }),
    ])
  if (keys.includes('gateway'))
    rows.push(['**slo-gateway ÷ best HAProxy**', ...levels.map((l) => ratioText(ratioToBest(l)))])
  report.table(
    [
      'interactive goodput req/s · tok/s',
      ...levels.map((l) => `${l.level}× (${fmt(l.interactiveRate, 1)} req/s)`),
    ],
    rows,
  )
}

export function qualityTable(report: Report, levels: readonly LevelResult[]): void {
  const rows: string[][] = []
  for (const l of levels) {
    for (const [key, m] of Object.entries(l.runs)) {
      const q = l.quality[key]
      if (m === undefined || q === undefined) continue
      const i = m.perClass.interactive
      const deg = q.degraded.map((d) => `${d.action} ${d.count} (${d.metSlo} met)`).join(', ')
      rows.push([
        `${l.level}×`,
        pathLabel(key),
        `${i.admitted}/${i.offered}`,
        pct(i.attainmentAdmitted),
        `${q.queueTimeouts} = ${pct(q.queueTimeoutShare)}`,
        q.refusals === 0 ? '' : `${fmt(q.refusalP99Ms, 1)} (${fmt(q.refusalP99WallMs, 1)} wall)`,
        q.queueRefusals === 0
          ? ''
          : `${q.queueRefusals} = ${pct(q.queueRefusalShare)}, p99 ${fmt(q.queueRefusalP99Ms, 0)} ms`,
        Number.isFinite(q.anyRefusalP99Ms) ? fmt(q.anyRefusalP99Ms, 0) : '',
        deg,
        q.buckets.map((b) => `${b.bucket} ${pct(b.rate, 0)}`).join(', '),
        longestVsShortest(q.buckets).text,
      ])
    }
  }
  report.table(
    [
      'load',
      'path',
      'admitted/offered',
      'admitted meeting TTFT and TPOT',
      'queue_timeout (of admitted)',
      'refusal on arrival p99 ms',
      'refused from the queue (of queued): n, wait p99',
      'any refusal p99 ms',
      'degraded: action n (met SLOs)',
      'refused by prompt length',
      'longest vs shortest bucket',
    ],
    rows,
  )
}
