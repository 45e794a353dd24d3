/**
 * The floor sweep of the admission bench (`--floors 0,0.05,0.2`): the gateway's run (warm-up,
 * then the levels back to back, the batch flood throughout) once per value of batch's
 * `min_share`, each through a gateway process of its own on the same simulator, and a table
 * of what batch gets and what interactive pays for it at each level: batch's share of the
 * prompt tokens served and its output tokens/s, interactive goodput and TTFT p99, each
 * against min_share 0 (strict priority: what the floor costs interactive).
 */
import { fmt, type Report } from '../src/loadgen/report.js'
import type { ClassSlo, SegmentMetrics } from './admission-metrics.js'
import { segmentMetrics, segmentSummary } from './admission-metrics.js'
import { ms, pct } from './admission-report.js'
import { runSegments, type Segment, waitIdle } from './admission-run.js'
import { cpuProfFlags, spawnChild } from './admission-spawn.js'
import type { BenchClass } from './admission-workload.js'
import type { Child } from './processes.js'

export interface FloorRun {
  readonly minShare: number
  /** Per measured level (its multiple of interactive capacity). */
  readonly levels: ReadonlyMap<number, SegmentMetrics>
}

/** What every run of the bench shares: the objectives, the log and the children to stop on a signal. */
export interface BenchContext {
  readonly slos: Record<BenchClass, ClassSlo>
  readonly log: (s: string) => void
  /** --gateway-set: config values every gateway child gets (PATH=VALUE, as the gateway's --set). */
  readonly gatewaySets?: readonly string[]
  /** --gateway-cpu-prof: each gateway child runs under `node --cpu-prof`, its profile written here. */
  readonly gatewayCpuProf?: string
  /** True once the bench stops its children itself. */
  readonly stopping: () => boolean
  /** Where a started child is registered, so a signal stops it. */
  readonly children: Child[]
}

export interface FloorOptions extends BenchContext {
  readonly minShares: readonly number[]
  readonly simUrl: string
  readonly simStatsUrl: string
  readonly model: string
  readonly scale: number
  /** The warm-up, then one segment per level (in `levels` order). */
  readonly segments: readonly Segment[]
  readonly levels: readonly number[]
}

/** A gateway child's `--set` arguments for `sets`. */
export function setArgs(sets: readonly string[] | undefined): string[] {
  return (sets ?? []).flatMap((s) => ['--set', s])
}

/** Parses `--floors`: comma-separated shares in [0, 1]. */
export function parseFloors(text: string): number[] {
  const values = text.split(',').map((s) => (s.trim() === '' ? Number.NaN : Number(s)))
  if (values.some((v) => !(v >= 0 && v <= 1)))
    throw new RangeError(`--floors: expected comma-separated numbers in [0, 1], got '${text}'`)
  return values
}

export async function runFloors(o: FloorOptions): Promise<FloorRun[]> {
  const out: FloorRun[] = []
  for (const minShare of o.minShares) {
    const name = `gateway (batch min_share ${minShare})`
    const gw = await spawnChild(
      name,
      [
        'gateway',
        '--sim',
        o.simUrl,
        '--model',
        o.model,
        '--scale',
        String(o.scale),
        '--min-share',
        String(minShare),
        ...setArgs(o.gatewaySets),
      ],
      o.log,
      o.stopping,
      cpuProfFlags(o.gatewayCpuProf),
    )
    o.children.push(gw.child)
    const probes = { simStatsUrl: o.simStatsUrl, adminUrl: gw.info.adminUrl as string }
    o.log(`floors: batch min_share ${minShare}: warm-up and ${o.levels.length} levels`)
    const run = await runSegments({
      url: gw.info.url as string,
      model: o.model,
      tag: `floor-${minShare}`,
      scale: o.scale,
      segments: o.segments,
      probes,
      log: o.log,
      label: `floor ${minShare}`,
    })
    const levels = new Map<number, SegmentMetrics>()
    run.segments.forEach((seg, i) => {
      const x = o.levels[i - 1] // segment 0 is the warm-up
      if (!seg.segment.measured || x === undefined) return
      const m = segmentMetrics(seg, run.outcomes, o.slos, o.scale)
      o.log(`floor ${minShare} ${seg.segment.name}: ${segmentSummary(m)}`)
      levels.set(x, m)
    })
    out.push({ minShare, levels })
    if (!(await waitIdle(probes, 120_000))) o.log(`warning: not idle 120 s after floor ${minShare}`)
    o.children.splice(o.children.indexOf(gw.child), 1)
    await gw.child.stop()
  }
  return out
}

/** Batch's share of the prompt tokens served in the window (first token within it), both classes. */
function batchPromptShare(m: SegmentMetrics): number {
  const b = m.perClass.batch.promptTokS
  const all = b + m.perClass.interactive.promptTokS
  return all > 0 ? b / all : Number.NaN
}

const change = (v: number, base: number | undefined) =>
  base === undefined || !(base > 0) ? '' : ` (${v >= base ? '+' : ''}${pct(v / base - 1, 0)})`

export function floorSection(report: Report, runs: readonly FloorRun[], levels: readonly number[]): void {
  report.heading("Batch's floor (min_share)")
  report.paragraph(
    [
      `The gateway run (warm-up, then the levels back to back, the batch flood throughout) once per`,
      `value of \`classes.batch.min_share\`, each through a gateway of its own on the same simulator.`,
      'Batch share: batch prompt tokens ÷ all prompt tokens whose first token came in the window (the',
      'prefill work the floor divides, measured at the client); 0 is strict priority. Interactive',
      'goodput and TTFT p99, with the change against min_share 0: what the floor costs interactive.',
    ].join('\n'),
  )
  const base = runs.find((r) => r.minShare === 0)
  const rows: string[][] = []
  for (const x of levels) {
    for (const r of runs) {
      const m = r.levels.get(x)
      if (m === undefined) continue
      const b = base?.levels.get(x)
      const i = m.perClass.interactive
      rows.push([
        `${x}×`,
        String(r.minShare),
        pct(batchPromptShare(m)),
        fmt(m.perClass.batch.throughputTokS, 0),
        `${fmt(i.goodputRps, 2)}${change(i.goodputRps, b?.perClass.interactive.goodputRps)}`,
        `${ms(i.ttft, 'p99')}${change(i.ttft.p99, b?.perClass.interactive.ttft.p99)}`,
        pct(i.attainmentAdmitted),
        pct(i.rejectionRate),
      ])
    }
  }
  report.table(
    [
      'load',
      'batch min_share',
      'batch share of prompt tokens',
      'batch output tok/s',
      'interactive goodput req/s',
      'interactive TTFT p99 ms',
      'interactive good / admitted',
      'interactive refused',
    ],
    rows,
  )
}
