/**
 * `slo-gateway bench --sweep M1,M2,...` and `--find-max-goodput`: the workload at several
 * offered rates, one open-loop run each, then the report: printed, and written to --out as
 * bench.json (every level: its summary and every request), summary.md (a table per level),
 * goodput-vs-load.svg and attainment-vs-load.svg (per class, against the offered rate) and
 * ttft-cdf.svg (the TTFT CDF of the first class at each level).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type BenchOptions, runLimits } from './bench-args.js'
import { outDir, roundedJson, ttftsOf } from './bench-files.js'
import { ProgressLine } from './bench-progress.js'
import type { Progress } from './bench-run.js'
import { BenchError, BenchSession } from './bench-session.js'
import { type CapacityResult, measureCapacity } from './capacity-probe.js'
import { findMaxGoodput } from './find-max-goodput.js'
import { type CurveInfo, type LoadCurve, loadCurveMarkdown } from './load-curve-markdown.js'
import { type CurveSeries, loadCurveSvg } from './load-curve-svg.js'
import { type LevelPoint, LevelRunner, pointLine } from './load-levels.js'
import { fmt } from './report.js'
import { ttftCdfSvg } from './ttft-cdf-svg.js'

async function sweep(
  session: BenchSession,
  o: BenchOptions & { sweep: readonly number[] },
  runner: LevelRunner,
  log: (l: string) => void,
): Promise<LoadCurve> {
  let capacity = o.capacity
  let probe: CapacityResult | undefined
  if (capacity === undefined) {
    const stepS = o.probeDurationS ?? 10
    log(`sweep: measuring the capacity first (closed-loop ramp, ${stepS} s a step)`)
    probe = await measureCapacity(session, stepS, log)
    if (!(probe.capacity > 0))
      throw new BenchError('the capacity ramp saw no successful request: is the target serving?')
    capacity = probe.capacity
    log(`sweep: capacity ${fmt(capacity, 2)} req/s (${probe.stop}, at concurrency ${probe.concurrency})`)
  }
  const points: LevelPoint[] = []
  for (const [i, m] of o.sweep.entries()) {
    log(`sweep: level ${i + 1}/${o.sweep.length}: ${m}x = ${fmt(m * capacity, 2)} req/s`)
    const p = await runner.run(m * capacity, m)
    points.push(p)
    log(`sweep: ${pointLine(p)}`)
  }
  return {
    kind: 'sweep',
    multiples: o.sweep,
    capacity,
    capacitySource: o.capacity === undefined ? 'measured' : 'given',
    probe,
    points,
  }
}

function series(points: readonly LevelPoint[], value: (p: LevelPoint, cls: string) => number): CurveSeries[] {
  const names = [...new Set(points.flatMap((p) => p.run.summary.classes.map((c) => c.class)))]
  return names.map((name) => ({
    name,
    points: points.flatMap((p) => {
      const has = p.run.summary.classes.some((c) => c.class === name)
      return has ? [[p.rate, value(p, name)] as const] : []
    }),
  }))
}

function writeCurve(
  out: string,
  c: LoadCurve,
  info: CurveInfo,
  session: BenchSession,
  markdown: string,
): string[] {
  mkdirSync(out, { recursive: true })
  const names = ['bench.json', 'summary.md', 'goodput-vs-load.svg', 'attainment-vs-load.svg', 'ttft-cdf.svg']
  const files = names.map((f) => join(out, f))
  const row = (p: LevelPoint, cls: string) => p.run.summary.classes.find((g) => g.class === cls)
  const levels = c.points.map((p) => {
    const { sendLagMs: _lag, ...run } = p.run.info
    return {
      rate: p.rate,
      ...(p.multiple === undefined ? {} : { multiple: p.multiple }),
      attainment: p.attainment,
      goodputRps: p.goodputRps,
      run,
      summary: p.run.summary,
      requests: p.run.result.records,
    }
  })
  const head =
    c.kind === 'sweep'
      ? { capacity: { rps: c.capacity, source: c.capacitySource, probe: c.probe } }
      : { search: { ...c.result, trials: undefined } }
  writeFileSync(
    files[0]!,
    roundedJson({ kind: c.kind, run: info, workload: session.workload, ...head, levels }),
  )
  writeFileSync(files[1]!, markdown)
  writeFileSync(
    files[2]!,
    loadCurveSvg({
      title: 'Goodput against offered load',
      yLabel: 'goodput (good requests/s)',
      series: series(c.points, (p, cls) => row(p, cls)?.goodputRps ?? Number.NaN),
      diagonal: 'offered (goodput = load)',
    }),
  )
  const target = c.kind === 'find' ? c.result.targetAttainment : undefined
  writeFileSync(
    files[3]!,
    loadCurveSvg({
      title: 'SLO attainment (of offered) against offered load',
      yLabel: 'attainment (good / offered)',
      series: series(c.points, (p, cls) => row(p, cls)?.attainmentOffered ?? Number.NaN),
      yMax: 1,
      percent: true,
      ...(target === undefined ? {} : { hline: { y: target, label: `target ${Math.round(target * 100)}%` } }),
    }),
  )
  const first = session.workload.classes[0]!
  const sorted = [...c.points].sort((a, b) => a.rate - b.rate)
  writeFileSync(
    files[4]!,
    ttftCdfSvg(
      sorted.map((p) => ({
        name: `${fmt(p.rate, 2)} req/s${p.multiple === undefined ? '' : ` (${p.multiple}x)`}`,
        values: ttftsOf(first.name, p.run.result),
      })),
      `TTFT CDF of ${first.name} by offered load${first.slo.ttft_ms === undefined ? '' : ` (SLO ${first.slo.ttft_ms} ms)`}`,
    ),
  )
  return files
}

/** A sweep or the search; returns the exit code. */
export async function runLoadCurveCommand(o: BenchOptions): Promise<number> {
  const session = await BenchSession.open({
    target: o.target,
    workload: o.workload,
    ...(o.model === undefined ? {} : { model: o.model }),
    ...(o.seed === undefined ? {} : { seed: o.seed }),
  })
  try {
    const limits = runLimits(o, session.workload)
    const log = o.quiet ? () => {} : (l: string) => process.stderr.write(`${l}\n`)
    const startedAt = Date.now()
    const tty = process.stderr.isTTY === true
    const say = (l: string) => log(tty ? `\r\x1b[K${l}` : l)
    const progress = o.quiet
      ? {}
      : {
          progress: () => {
            const line = new ProgressLine(limits.durationS, limits.requests)
            return (p: Progress) =>
              process.stderr.write(tty ? `\r\x1b[K${line.line(p)}` : `${line.line(p)}\n`)
          },
        }
    let curve: LoadCurve
    if (o.sweep !== undefined) {
      const runner = new LevelRunner(session, {
        ...limits,
        ...(o.sloClass === undefined ? {} : { sloClass: o.sloClass }),
        pauseMs: 1000,
        ...progress,
      })
      curve = await sweep(session, { ...o, sweep: o.sweep }, runner, say)
    } else {
      const result = await findMaxGoodput({
        target: o.target,
        workload: session.loaded,
        session,
        ...limits,
        ...(o.mode !== undefined && 'rate' in o.mode ? { startRate: o.mode.rate } : {}),
        ...(o.capacity === undefined ? {} : { capacity: o.capacity }),
        ...(o.attainment === undefined ? {} : { attainment: o.attainment }),
        ...(o.sloClass === undefined ? {} : { sloClass: o.sloClass }),
        ...(o.tolerance === undefined ? {} : { tolerance: o.tolerance }),
        ...(o.maxTrials === undefined ? {} : { maxTrials: o.maxTrials }),
        ...(o.step === undefined ? {} : { step: o.step }),
        ...(o.probeDurationS === undefined ? {} : { probeStepS: o.probeDurationS }),
        ...progress,
        log: say,
      })
      curve = { kind: 'find', result, points: result.trials }
    }
    const info: CurveInfo = {
      target: o.target,
      model: session.model,
      workload: o.workload,
      seed: session.seed,
      limit: limits.durationS !== undefined ? `for ${limits.durationS} s` : `of ${limits.requests} requests`,
      startedAt: new Date(startedAt).toISOString(),
    }
    const markdown = loadCurveMarkdown(curve, info, session.slos)
    const files = writeCurve(outDir(o, startedAt), curve, info, session, markdown)
    process.stdout.write(`${markdown}\nWrote ${files.join(', ')}\n`)
    return 0
  } finally {
    await session.close()
  }
}
