/**
 * `npm run bench:admission [-- --quick] [-- --config FILE] [-- --out FILE] [-- --scale X] [-- --floors LIST]`
 *
 * Admission control under load: the same seeded workload (interactive chat at 0.5×, 1×, 2×,
 * 4× the simulator's interactive capacity, plus a batch flood) against (a) the simulator
 * directly and (b) the simulator through the gateway, time-scaled; with `--floors`, also (c) the
 * gateway once per value of batch's min_share (bench/admission-floor.ts). Writes
 * reports/admission.md and prints it; progress goes to stderr. Benchmarks report; they
 * never assert.
 */
import { writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { BUILTIN_CLASSES } from '../src/config/schema.js'
import { Report } from '../src/loadgen/report.js'
import { loadProfile } from '../src/sim/index.js'
import { measureCapacity, referenceLevel } from './admission-capacity.js'
import { outcomeLine } from './admission-client.js'
import { loadBenchFile, workloadSpec } from './admission-config.js'
import {
  calibrationSection,
  diagnosisSection,
  estimatorSection,
  referenceSection,
} from './admission-diagnosis.js'
import { type FloorRun, floorSection, parseFloors, runFloors } from './admission-floor.js'
import { estimatorError, segmentMetrics, segmentSummary } from './admission-metrics.js'
import { type LevelResult, resultsSection, targetsSection } from './admission-report.js'
import {
  gatewayState,
  type RunResult,
  runSegments,
  type Segment,
  segmentMs,
  waitIdle,
} from './admission-run.js'
import { setupSection } from './admission-setup.js'
import { spawnChild } from './admission-spawn.js'
import { mergedArrivals } from './admission-workload.js'
import type { Child } from './processes.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

const USAGE = `Usage: npm run bench:admission -- [options]

  --quick         short windows (about 3 min instead of about 10)
  --config FILE   workload file (default config/workloads/admission.yaml)
  --scale X       time scale (default: the file's time_scale)
  --out FILE      report file (default reports/admission.md)
  --raw FILE      also write every request's outcome as JSON lines (wall ms)
  --only PATH     run only one path: direct, gateway or floors
  --floors LIST   also run the gateway once per batch min_share in LIST (e.g. 0,0.05,0.2) and
                  report what batch gets and what interactive pays for it, per level
  --batch-load X  batch flood as a multiple of batch saturation (default: the file's batch.load; 0 = none)
  -h, --help      this help
`

const log = (s: string) => process.stderr.write(`[bench:admission] ${s}\n`)
/** Set when the bench stops its children itself. */
let stopping = false

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      config: { type: 'string', default: join(ROOT, 'config/workloads/admission.yaml') },
      scale: { type: 'string' },
      out: { type: 'string', default: join(ROOT, 'reports/admission.md') },
      raw: { type: 'string' },
      only: { type: 'string' },
      floors: { type: 'string' },
      'batch-load': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return
  }
  const file = loadBenchFile(values.config)
  const scale = values.scale === undefined ? file.time_scale : Number(values.scale)
  if (!(scale > 0)) throw new RangeError(`--scale: expected a positive number, got '${values.scale}'`)
  if (values.only !== undefined && !['direct', 'gateway', 'floors'].includes(values.only))
    throw new RangeError(`--only: expected direct, gateway or floors, got '${values.only}'`)
  const minShares = parseFloors(values.floors ?? '0,0.05,0.2')
  const paths =
    values.only === undefined
      ? ['direct', 'gateway', ...(values.floors === undefined ? [] : ['floors'])]
      : [values.only]
  const spec = workloadSpec(file)
  const profile = loadProfile(file.profile)
  const w = values.quick ? file.run.quick : file.run.full
  const started = performance.now()
  const loadBefore = loadavg()

  // SLOs in model time: the gateway's built-in class defaults (the child scales them for the gateway)
  const slo = {
    ttftMs: BUILTIN_CLASSES.interactive.slo.ttft_ms,
    tpotMs: BUILTIN_CLASSES.interactive.slo.tpot_ms,
  }
  const slos = { interactive: slo, batch: { e2eMs: BUILTIN_CLASSES.batch.slo.e2e_ms } }

  log(`capacity: bisecting the interactive rate on the simulator's engine (virtual time)`)
  const { capRun, cap } = measureCapacity(profile, spec, slo, file.capacity)
  const batchLoad = values['batch-load'] === undefined ? file.batch.load : Number(values['batch-load'])
  if (!(batchLoad >= 0))
    throw new RangeError(`--batch-load: expected a number >= 0, got '${values['batch-load']}'`)
  const batchRate = batchLoad * cap.batchSat.requestsPerS
  log(
    `capacity: interactive ${cap.interactiveRps.toFixed(2)} req/s at ≥${file.capacity.attainment * 100}% attainment; ` +
      `saturation interactive ${cap.interactiveSat.requestsPerS.toFixed(1)} req/s, batch ${cap.batchSat.requestsPerS.toFixed(1)} req/s`,
  )
  const level = (x: number, name = `${x}×`, measured = true): Segment => {
    const dur = (w.settle_s + w.measure_s + w.tail_s) * 1000
    return {
      name,
      measured,
      settleMs: w.settle_s * 1000,
      measureMs: w.measure_s * 1000,
      tailMs: w.tail_s * 1000,
      arrivals: mergedArrivals(spec, { interactive: x * cap.interactiveRps, batch: batchRate }, dur),
    }
  }
  const warmup = (ms: number): Segment => ({
    name: 'warm-up',
    measured: false,
    settleMs: ms,
    measureMs: 0,
    tailMs: 0,
    arrivals: mergedArrivals(
      { ...spec, seed: spec.seed + 1000 },
      { interactive: cap.interactiveRps, batch: batchRate },
      ms,
    ),
  })

  log(`reference: the levels on the simulator's engine, virtual time, directly (no gateway)`)
  const reference = file.levels.map((x) => {
    const seg = level(x)
    return referenceLevel(profile, x, seg, segmentMs(seg), slo)
  })

  const children: Child[] = []
  const stopAll = async () => {
    stopping = true
    for (const c of children.splice(0).reverse()) await c.stop()
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      log(`${signal}: stopping the child processes`)
      void stopAll().finally(() => process.exit(130))
    })
  try {
    log(`starting the simulator (${file.profile}, scale ${scale}) and the gateway, each in its own process`)
    const sim = await spawnChild(
      'simulator',
      ['sim', '--profile', file.profile, '--scale', String(scale), '--seed', String(file.seed)],
      log,
      () => stopping,
    )
    children.push(sim.child)
    const model = sim.info.model as string
    const gw = await spawnChild(
      'gateway',
      ['gateway', '--sim', sim.info.url as string, '--model', model, '--scale', String(scale)],
      log,
      () => stopping,
    )
    children.push(gw.child)
    const simStatsUrl = sim.info.statsUrl as string
    log(
      `simulator ${sim.info.url} (stats ${simStatsUrl}); gateway ${gw.info.url} (admin ${gw.info.adminUrl})`,
    )
    const adminUrl = gw.info.adminUrl as string
    const direct = { url: sim.info.url as string, probes: { simStatsUrl } }
    const viaGateway = { url: gw.info.url as string, probes: { simStatsUrl, adminUrl } }
    const results = new Map<number, LevelResult>(
      file.levels.map((x) => [
        x,
        { level: x, interactiveRate: x * cap.interactiveRps, batchRate, runs: {} } satisfies LevelResult,
      ]),
    )
    const raw: string[] = []
    const keep = (path: string, run: RunResult) => {
      if (values.raw === undefined) return
      for (const [i, seg] of run.segments.entries())
        for (const o of seg.outcomes)
          raw.push(JSON.stringify(outcomeLine(path, `${i}:${seg.segment.name}`, o)))
    }

    // (a) directly: each level a run of its own from an idle simulator, after a short warm-up
    if (paths.includes('direct')) {
      log('direct: warm-up')
      await runSegments({
        ...direct,
        model,
        tag: 'warm-direct',
        scale,
        segments: [warmup(2000)],
        log,
        label: 'direct',
      })
      await waitIdle(direct.probes, 120_000)
      for (const x of file.levels) {
        const seg = level(x)
        log(
          `direct ${seg.name}: ${seg.arrivals.length} requests over ${((segmentMs(seg) * scale) / 1000).toFixed(0)} s`,
        )
        const run = await runSegments({
          ...direct,
          model,
          tag: `direct-${x}`,
          scale,
          segments: [seg],
          log,
          label: 'direct',
        })
        keep('direct', run)
        const m = segmentMetrics(run.segments[0]!, run.outcomes, slos, scale)
        ;(results.get(x) as LevelResult).runs.direct = m
        log(`direct ${seg.name}: ${segmentSummary(m)}`)
        if (!(await waitIdle(direct.probes, 120_000)))
          log(`warning: simulator not idle 120 s after direct ${seg.name}`)
      }
    }

    // (b) through the gateway: warm-up, then the levels back to back in one run
    let stateBefore: unknown
    let stateAfter: unknown
    let batchAlone: number | undefined
    if (paths.includes('gateway')) {
      // Last, the flood alone: what batch gets through the gateway once interactive stops (the
      // decode guard still holds it to interactive's TPOT objective).
      const segments = [
        warmup(w.warmup_s * 1000),
        ...file.levels.map((x) => level(x)),
        ...(batchRate > 0 ? [level(0, 'batch alone')] : []),
      ]
      const total = segments.reduce((a, g) => a + segmentMs(g), 0)
      log(
        `gateway: warm-up, ${file.levels.length} levels and the flood alone, back to back, ${((total * scale) / 1000).toFixed(0)} s`,
      )
      stateBefore = await gatewayState(adminUrl)
      const run = await runSegments({
        ...viaGateway,
        model,
        tag: 'gateway',
        scale,
        segments,
        log,
        label: 'gateway',
      })
      keep('gateway', run)
      for (const seg of run.segments) {
        if (!seg.segment.measured) continue
        const m = segmentMetrics(seg, run.outcomes, slos, scale)
        log(`gateway ${seg.segment.name}: ${segmentSummary(m)}`)
        const x = file.levels[run.segments.indexOf(seg) - 1]
        if (x === undefined) batchAlone = m.perClass.batch.throughputTokS
        else (results.get(x) as LevelResult).runs.gateway = m
      }
      stateAfter = await gatewayState(adminUrl)
      if (!(await waitIdle(viaGateway.probes, 120_000))) log('warning: not idle 120 s after the gateway run')
    }

    // (c) the floor sweep: the gateway's run once per batch min_share, each gateway a process of its own
    let floors: FloorRun[] = []
    if (paths.includes('floors')) {
      floors = await runFloors({
        minShares,
        simUrl: sim.info.url as string,
        simStatsUrl,
        model,
        scale,
        segments: [warmup(w.warmup_s * 1000), ...file.levels.map((x) => level(x))],
        levels: file.levels,
        slos,
        log,
        stopping: () => stopping,
        children,
      })
    }

    const levels = [...results.values()]
    const pooled = estimatorError(
      levels.flatMap((l) => [...(l.runs.gateway?.perClass.interactive.estimator.signed ?? [])]),
    )
    const report = new Report()
    setupSection(report, {
      quick: values.quick,
      scale,
      file,
      configPath: values.config,
      windows: w,
      cap,
      capRun,
      batchRate,
      slo,
      cores: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown CPU',
      loadBefore,
    })
    targetsSection(report, levels, cap, slo, pooled, batchAlone)
    diagnosisSection(report, levels, slo, scale)
    resultsSection(report, levels, cap)
    if (floors.length > 0) floorSection(report, floors, file.levels)
    referenceSection(report, reference, cap)
    estimatorSection(report, levels, scale)
    calibrationSection(report, stateBefore, stateAfter)
    report.paragraph(
      `Wall time: ${((performance.now() - started) / 1000).toFixed(0)} s. Load average (1/5/15 min) before: ` +
        `${loadBefore.map((v) => v.toFixed(2)).join(' ')}; after: ${loadavg()
          .map((v) => v.toFixed(2))
          .join(' ')}.`,
    )
    report.write(values.out)
    log(`report written to ${values.out}`)
    if (values.raw !== undefined) {
      writeFileSync(values.raw, `${raw.join('\n')}\n`)
      log(`raw outcomes written to ${values.raw}`)
    }
  } finally {
    await stopAll()
  }
}

main().catch((err: unknown) => {
  const usage = (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS') || err instanceof RangeError
  log(usage ? `${(err as Error).message}\n\n${USAGE}` : `failed: ${(err as Error).stack ?? String(err)}`)
  process.exitCode = 1
})
