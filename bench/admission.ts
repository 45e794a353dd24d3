/**
 * `npm run bench:admission [-- --quick] [-- --workloads LIST] [-- --paths LIST] [-- --floors LIST] ...`
 * `npm run bench:peers:goodput [-- --quick]` (the same bench, `--preset peers-goodput`)
 *
 * Admission control under load, on several workloads (config/workloads/admission.yaml,
 * `workloads:`), each reported apart: the same seeded segments (interactive at 0.5×, 1×, 2×, 4×
 * of the simulator's interactive capacity, plus a batch flood where the workload has one),
 * time-scaled, against the simulator directly, nginx, HAProxy at each maxconn (the yardstick),
 * and a fresh gateway (its first segment the cold start); with `--floors`, also the gateway once
 * per batch min_share. Writes reports/admission.md (a preset: its own file) and prints it;
 * progress goes to stderr. Benchmarks report; they never assert.
 */

import { writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { BUILTIN_CLASSES } from '../src/config/schema.js'
import { Report } from '../src/loadgen/report.js'
import { gatewayConfig } from './admission-child.js'
import { outcomeLine } from './admission-client.js'
import { loadBenchFile } from './admission-config.js'
import { parseFloors } from './admission-floor.js'
import { rawVerdict } from './admission-metrics.js'
import { PATHS, type PathName, runWorkload } from './admission-paths.js'
import { peerVersions, workloadSection } from './admission-sections.js'
import { setupSection } from './admission-setup.js'
import { targetsTable, type WorkloadOutcome } from './admission-targets.js'
import { parseLevels, selectWorkloads } from './admission-workloads.js'
import { type Child, stopOnSignals } from './processes.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

const USAGE = `Usage: npm run bench:admission -- [options]

  --quick           short windows (see the file's run.quick)
  --config FILE     workload file (default config/workloads/admission.yaml)
  --workloads LIST  comma-separated workloads of the file's workloads: (default all)
  --levels LIST     load levels as multiples of capacity (default: the file's levels)
  --paths LIST      of direct, nginx, haproxy, gateway, floors (default all but floors)
  --preset NAME     a preset of the file (peers-goodput: bench:peers:goodput)
  --scale X         time scale for every workload (default: each workload's, else the file's)
  --out FILE        report file (default reports/admission.md, or the preset's)
  --raw FILE        also write every request's outcome as JSON lines (wall ms), with judged
                    (it arrived in the measured window) and good (admitted and good at the
                    judging horizon): the judged good ones add up to the report's goodput
  --floors LIST     also run the gateway once per batch min_share in LIST (e.g. 0,0.05,0.2)
  --batch-load X    batch flood as a multiple of batch saturation, every workload (0 = none)
  --gateway-set PATH=VALUE
                    a gateway config value, as its --set (not time-scaled; repeatable), e.g.
                    --gateway-set admission.ttft_reserve_quantile=0
  --gateway-cpu-prof DIR
                    run every gateway under node --cpu-prof, its .cpuprofile written to DIR
                    (where its CPU goes under this bench's load; open in Chrome's DevTools)
  -h, --help        this help
`

const t0 = performance.now()
const log = (s: string) =>
  process.stderr.write(`[bench:admission ${((performance.now() - t0) / 1000).toFixed(0)} s] ${s}\n`)
/** Set when the bench stops its children itself. */
let stopping = false

function parsePaths(text: string | undefined, floors: boolean): PathName[] {
  if (text === undefined)
    return ['direct', 'nginx', 'haproxy', 'gateway', ...(floors ? (['floors'] as const) : [])]
  const names = text.split(',').map((s) => s.trim())
  const bad = names.filter((n) => !(PATHS as readonly string[]).includes(n))
  if (bad.length > 0) throw new RangeError(`--paths: unknown ${bad.join(', ')}; known: ${PATHS.join(', ')}`)
  return names as PathName[]
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      config: { type: 'string', default: join(ROOT, 'config/workloads/admission.yaml') },
      workloads: { type: 'string' },
      levels: { type: 'string' },
      paths: { type: 'string' },
      preset: { type: 'string' },
      scale: { type: 'string' },
      out: { type: 'string' },
      raw: { type: 'string' },
      floors: { type: 'string' },
      'batch-load': { type: 'string' },
      'gateway-set': { type: 'string', multiple: true },
      'gateway-cpu-prof': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return
  }
  const file = loadBenchFile(values.config)
  const preset = values.preset === undefined ? undefined : file.presets[values.preset]
  if (values.preset !== undefined && preset === undefined)
    throw new RangeError(
      `--preset: unknown '${values.preset}'; known: ${Object.keys(file.presets).join(', ') || 'none'}`,
    )
  const scaleArg = values.scale === undefined ? preset?.time_scale : Number(values.scale)
  if (scaleArg !== undefined && !(scaleArg > 0))
    throw new RangeError(`--scale: expected a positive number, got '${values.scale}'`)
  const batchArg = values['batch-load'] === undefined ? undefined : Number(values['batch-load'])
  if (batchArg !== undefined && !(batchArg >= 0))
    throw new RangeError(`--batch-load: expected a number >= 0, got '${values['batch-load']}'`)
  const workloads = selectWorkloads(file, values.workloads ?? preset?.workloads.join(','), scaleArg).map(
    (w) => (batchArg === undefined ? w : { ...w, batchLoad: batchArg }),
  )
  const levels = values.levels === undefined ? (preset?.levels ?? file.levels) : parseLevels(values.levels)
  const paths = parsePaths(values.paths, values.floors !== undefined)
  const minShares = parseFloors(values.floors ?? '0,0.05,0.2')
  const gatewaySets = values['gateway-set'] ?? []
  // a bad PATH=VALUE fails here, before the simulator starts
  gatewayConfig('http://sim', 'model', 1, undefined, undefined, gatewaySets)
  const runWindows = preset?.run ?? file.run
  const windows = values.quick ? runWindows.quick : runWindows.full
  const out =
    values.out ?? (preset === undefined ? join(ROOT, 'reports/admission.md') : join(ROOT, preset.out))
  const started = performance.now()
  const loadBefore = loadavg()

  const children: Child[] = []
  const stopAll = async () => {
    stopping = true
    for (const c of children.splice(0).reverse()) await c.stop()
  }
  stopOnSignals(stopAll, log)
  const raw: string[] = []
  const report = new Report()
  try {
    const outcomes: WorkloadOutcome[] = []
    const sections: Parameters<typeof workloadSection>[1][] = []
    for (const wl of workloads) {
      // SLOs in model time: the gateway's built-in class defaults (the child scales them for the gateway)
      const interactive = {
        ttftMs: BUILTIN_CLASSES.interactive.slo.ttft_ms,
        tpotMs: BUILTIN_CLASSES.interactive.slo.tpot_ms,
        ...(wl.ttftPer1k === undefined ? {} : { ttftPer1kMs: wl.ttftPer1k }),
      }
      const slos = { interactive, batch: { e2eMs: BUILTIN_CLASSES.batch.slo.e2e_ms } }
      const run = await runWorkload({
        root: ROOT,
        file,
        workload: wl,
        levels,
        windows,
        paths,
        minShares,
        gatewaySets,
        ...(values['gateway-cpu-prof'] === undefined ? {} : { gatewayCpuProf: values['gateway-cpu-prof'] }),
        slos,
        log,
        stopping: () => stopping,
        children,
        keep: (path, r) => {
          if (values.raw === undefined) return
          const where = `${wl.name}/${path}`
          for (const [i, seg] of r.segments.entries()) {
            const segment = `${i}:${seg.segment.name}`
            for (const o of seg.outcomes) {
              const slo = o.arrival.cls === 'interactive' ? slos.interactive : slos.batch
              const verdict = rawVerdict(o, seg.window, slo, wl.scale)
              raw.push(JSON.stringify({ ...outcomeLine(where, segment, o), ...verdict }))
            }
            for (const { arm, retryAfterMs, outcome } of seg.retries)
              raw.push(
                JSON.stringify({ ...outcomeLine(where, segment, outcome), retry: { arm, retryAfterMs } }),
              )
          }
        },
      })
      outcomes.push({
        name: wl.name,
        levels: run.levels,
        cold: run.cold,
        steady: run.steady,
        lengthAware: wl.ttftPer1k !== undefined,
      })
      sections.push({ workload: wl, run, slo: interactive })
    }
    const first = sections[0]
    if (first !== undefined)
      setupSection(report, {
        ...(preset === undefined ? {} : { title: preset.title }),
        quick: values.quick,
        scale: first.workload.scale,
        file,
        configPath: values.config,
        windows,
        cap: first.run.capacity.cap,
        capRun: first.run.capacity.capRun,
        batchRate: first.run.batchRate,
        slo: { ttftMs: first.slo.ttftMs, tpotMs: first.slo.tpotMs },
        cores: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown CPU',
        loadBefore,
        gatewaySets,
      })
    report.heading('The yardsticks and the workloads')
    report.paragraph(peerVersions(file, workloads, levels, paths, windows))
    report.heading("Issue 14's bench targets (acceptance 2), per workload")
    targetsTable(report, outcomes)
    for (const s of sections) workloadSection(report, s)
    report.paragraph(
      `Wall time: ${((performance.now() - started) / 1000).toFixed(0)} s. Load average (1/5/15 min) before: ` +
        `${loadBefore.map((v) => v.toFixed(2)).join(' ')}; after: ${loadavg()
          .map((v) => v.toFixed(2))
          .join(' ')}.`,
    )
    report.write(out)
    log(`report written to ${out}`)
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
