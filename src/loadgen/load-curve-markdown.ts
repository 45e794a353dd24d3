/**
 * The markdown of a load curve (a sweep, or the search for the highest rate within SLO): how
 * the capacity was had, the result of the search, one row per level and class (attainment,
 * goodput, refusals, TTFT), then each level's full report (benchMarkdown, headings one deeper).
 */
import { benchMarkdown } from './bench-markdown.js'
import type { CapacityResult } from './capacity-probe.js'
import type { MaxGoodputResult } from './find-max-goodput.js'
import type { LevelPoint } from './load-levels.js'
import { fmt, Report } from './report.js'
import type { SloSpec } from './workload-schema.js'

export interface CurveInfo {
  readonly target: string
  readonly model: string
  readonly workload: string
  readonly seed: number
  /** "for 20 s" or "200 requests", per level. */
  readonly limit: string
  readonly startedAt: string
}

export type LoadCurve =
  | {
      readonly kind: 'sweep'
      readonly multiples: readonly number[]
      readonly capacity: number
      readonly capacitySource: 'given' | 'measured'
      readonly probe: CapacityResult | undefined
      readonly points: readonly LevelPoint[]
    }
  | { readonly kind: 'find'; readonly result: MaxGoodputResult; readonly points: readonly LevelPoint[] }

const pct = (v: number) => (Number.isFinite(v) ? `${(v * 100).toFixed(1)}%` : 'n/a')
const ms = (v: number) => fmt(v, v >= 100 ? 0 : 1)

function probeTable(r: Report, probe: CapacityResult): void {
  r.table(
    ['concurrency', 'ok req/s (concurrency / mean latency × ok share)', 'refused'],
    probe.steps.map((s) => [s.concurrency, fmt(s.throughput, 2), pct(s.refusedShare)]),
  )
}

const STOP_TEXT = {
  converged: 'the bracket closed to the tolerance',
  'max-trials': 'the trial limit was reached first',
  'none-passed': 'no rate down to 1/64 of the first one passed',
} as const

function searchText(res: MaxGoodputResult): string {
  const judged = res.sloClass === undefined ? 'every request' : `class ${res.sloClass}`
  const head =
    res.rate > 0
      ? `**Max goodput: ${fmt(res.rate, 2)} req/s offered** kept ${pct(res.attainment)} of ${judged} within SLO (target ${pct(res.targetAttainment)}); goodput there ${fmt(res.goodputRps, 2)} good req/s.`
      : `**No rate kept ${pct(res.targetAttainment)}** of ${judged} within SLO.`
  const miss =
    res.failRate === undefined
      ? ' No rate tried missed the target: the true maximum may be higher.'
      : ` The lowest rate that missed: ${fmt(res.failRate, 2)} req/s.`
  return `${head}${miss} Stopped because ${STOP_TEXT[res.stop]}, after ${res.trials.length} trials.`
}

export function loadCurveMarkdown(c: LoadCurve, info: CurveInfo, slos: ReadonlyMap<string, SloSpec>): string {
  const r = new Report(false)
  r.heading(`slo-gateway bench ${c.kind === 'sweep' ? 'sweep' : '--find-max-goodput'}: ${info.workload}`, 1)
  const lines = [
    `- Target: ${info.target} (model ${info.model}); started ${info.startedAt}; seed ${info.seed} (the same requests at every level, only their times scale)`,
    `- Each level: an open loop ${info.limit}, a fresh run tag (no prompt cached from another level)`,
  ]
  if (c.kind === 'sweep')
    lines.push(
      `- Levels: ${c.multiples.join(', ')} × capacity ${fmt(c.capacity, 2)} req/s (${c.capacitySource === 'given' ? '--capacity' : 'measured: the saturation throughput of a closed-loop ramp'})`,
    )
  r.paragraph(lines.join('\n'))
  const probe = c.kind === 'sweep' ? c.probe : c.result.capacity
  if (c.kind === 'find') r.paragraph(searchText(c.result))
  if (probe !== undefined) {
    r.heading('Capacity (closed-loop ramp)')
    r.paragraph(
      `Concurrency doubled until a step gained < 10% or refused > 10%: ${fmt(probe.capacity, 2)} req/s at concurrency ${probe.concurrency} (${probe.stop}).`,
    )
    probeTable(r, probe)
  }
  const ordered = [...c.points].sort((a, b) => a.rate - b.rate)
  r.heading(c.kind === 'sweep' ? 'Levels' : 'Trials (by rate)')
  r.table(
    [
      c.kind === 'sweep' ? 'level' : 'trial',
      'offered req/s',
      'class',
      'offered',
      'good',
      'attainment (offered)',
      'attainment (admitted)',
      'goodput req/s',
      'goodput tok/s',
      'rejected',
      'failed',
      'TTFT P50',
      'TTFT P99',
      'TPOT P50',
    ],
    ordered.flatMap((p) =>
      p.run.summary.classes.map((g) => [
        c.kind === 'sweep' ? `${p.multiple}x` : String(c.points.indexOf(p) + 1),
        fmt(p.rate, 2),
        g.class,
        g.offered,
        g.good,
        pct(g.attainmentOffered),
        pct(g.attainmentAdmitted),
        fmt(g.goodputRps, 2),
        fmt(g.goodputTps, 0),
        pct(g.rejectionRate),
        g.failed,
        ms(g.ttftMs.p50),
        ms(g.ttftMs.p99),
        ms(g.tpotMs.p50),
      ]),
    ),
  )
  for (const p of ordered) {
    const name = c.kind === 'sweep' ? `${p.multiple}x` : `trial ${c.points.indexOf(p) + 1}`
    r.heading(`Level ${name}: ${fmt(p.rate, 2)} req/s`)
    const body = benchMarkdown({ ...p.run.info, workload: info.workload }, p.run.summary, slos)
    r.paragraph(
      body
        .replace(/^# [^\n]*\n+/, '')
        .replace(/^(#+) /gm, '$1# ')
        .trimEnd(),
    )
  }
  return r.toString()
}
