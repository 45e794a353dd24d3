/**
 * One workload of the admission bench, on every path: a simulator process of its own (its
 * profile and replicas), then the same seeded segments directly, through nginx, through HAProxy
 * at each maxconn, and through a fresh gateway (its first segment the cold start), and with
 * `--floors` once per batch min_share. The simulator and every proxy are child processes,
 * stopped before the next workload starts.
 */
import { loadProfile } from '../src/sim/index.js'
import { measureCapacity, type ReferenceLevel, referenceLevel } from './admission-capacity.js'
import { haproxyKey, pathLabel } from './admission-compare.js'
import type { BenchFile } from './admission-config.js'
import { type BenchContext, type FloorRun, runFloors, setArgs } from './admission-floor.js'
import type { EstimatorError } from './admission-metrics.js'
import { estimatorError, segmentMetrics, segmentSummary } from './admission-metrics.js'
import { type RunningPeer, startPeer } from './admission-peers.js'
import { forgetHashes } from './admission-prefix-hashes.js'
import { quality } from './admission-quality.js'
import type { LevelResult } from './admission-report.js'
import {
  gatewayState,
  type Probes,
  type RunResult,
  runSegments,
  type Segment,
  segmentMs,
  waitIdle,
} from './admission-run.js'
import { cpuProfFlags, spawnChild } from './admission-spawn.js'
import { mergedArrivals } from './admission-workload.js'
import type { Workload } from './admission-workloads.js'
import type { Child } from './processes.js'

export const PATHS = ['direct', 'nginx', 'haproxy', 'gateway', 'floors'] as const
export type PathName = (typeof PATHS)[number]

export interface WorkloadRunOptions extends BenchContext {
  readonly root: string
  readonly file: BenchFile
  readonly workload: Workload
  readonly levels: readonly number[]
  readonly windows: BenchFile['run']['full']
  readonly paths: readonly PathName[]
  readonly minShares: readonly number[]
  /** Every run's outcomes, for --raw. */
  readonly keep: (path: string, run: RunResult) => void
}

export interface WorkloadRun {
  readonly levels: LevelResult[]
  readonly capacity: ReturnType<typeof measureCapacity>
  readonly batchRate: number
  readonly reference: ReferenceLevel[]
  readonly cold: EstimatorError
  readonly steady: EstimatorError
  readonly stateBefore?: unknown
  readonly stateAfter?: unknown
  readonly batchAlone?: number
  readonly floors: FloorRun[]
  /** Paths that could not run, and why. */
  readonly skipped: string[]
}

/** Runs `fn` with a child registered for signals, stopped (and unregistered) after it. */
async function withChild<T>(
  children: Child[],
  child: Child,
  stop: () => Promise<void>,
  fn: () => Promise<T>,
) {
  children.push(child)
  try {
    return await fn()
  } finally {
    children.splice(children.indexOf(child), 1)
    await stop()
  }
}

export async function runWorkload(o: WorkloadRunOptions): Promise<WorkloadRun> {
  const { workload: wl, windows: w, log, slos } = o
  const scale = wl.scale
  const profile = loadProfile(wl.profile)
  const slo = { ttftMs: slos.interactive.ttftMs ?? 500, tpotMs: slos.interactive.tpotMs ?? 50 }
  log(`${wl.name}: capacity on the simulator's engine (virtual time)`)
  const measured = measureCapacity(profile, wl.spec, slo, o.file.capacity)
  // a pool of R replicas: R × one replica's capacity (the load is split over them)
  const r = wl.replicas
  const cap = {
    ...measured.cap,
    interactiveRps: measured.cap.interactiveRps * r,
    interactiveSat: {
      ...measured.cap.interactiveSat,
      requestsPerS: measured.cap.interactiveSat.requestsPerS * r,
    },
    batchSat: { ...measured.cap.batchSat, requestsPerS: measured.cap.batchSat.requestsPerS * r },
  }
  const capacity = { capRun: measured.capRun, cap }
  const batchRate = wl.batchLoad * cap.batchSat.requestsPerS
  log(
    `${wl.name}: 1× = ${cap.interactiveRps.toFixed(2)} interactive req/s; batch flood ${batchRate.toFixed(2)} req/s`,
  )
  // a measured window long enough for `min_requests` interactive arrivals at the level's rate
  // (a slow engine's 1× is about one request a second: 2 s would judge two requests)
  const minRequests = wl.minRequests ?? w.min_requests ?? 0
  const measureMs = (x: number) =>
    x > 0 ? Math.max(w.measure_s, minRequests / (x * cap.interactiveRps)) * 1000 : w.measure_s * 1000
  const segDur = (x: number) => (w.settle_s + w.tail_s) * 1000 + measureMs(x)
  const level = (x: number, name = `${x}×`): Segment => ({
    name,
    measured: true,
    settleMs: w.settle_s * 1000,
    measureMs: measureMs(x),
    tailMs: w.tail_s * 1000,
    // bursty arrivals offer the level's count in each part, the measured window among them
    arrivals: mergedArrivals(wl.spec, { interactive: x * cap.interactiveRps, batch: batchRate }, segDur(x), [
      w.settle_s * 1000,
      measureMs(x),
      w.tail_s * 1000,
    ]),
  })
  // not judged for goodput; its window is the whole segment, so the estimator's error in it is read
  const lead = (ms: number, name: string): Segment => ({
    name,
    measured: false,
    settleMs: 0,
    measureMs: ms,
    tailMs: 0,
    arrivals: mergedArrivals(
      { ...wl.spec, seed: wl.spec.seed + 1000 },
      { interactive: cap.interactiveRps, batch: batchRate },
      ms,
    ),
  })
  // the reference on virtual time: one replica, so only for one-replica workloads
  const reference = r === 1 ? o.levels.map((x) => referenceLevel(profile, x, level(x), segDur(x), slo)) : []
  forgetHashes()
  const levels: LevelResult[] = o.levels.map((x) => ({
    level: x,
    interactiveRate: x * cap.interactiveRps,
    batchRate,
    runs: {},
    quality: {},
  }))
  const record = (key: string, x: number, run: RunResult, i: number) => {
    const seg = run.segments[i]
    const l = levels.find((v) => v.level === x)
    if (seg === undefined || l === undefined) return
    const m = segmentMetrics(seg, run.outcomes, slos, scale)
    l.runs[key] = m
    l.quality[key] = quality(seg, slos.interactive, scale)
    log(`${wl.name} ${pathLabel(key)} ${seg.segment.name}: ${segmentSummary(m)}`)
  }
  const skipped: string[] = []
  let cold = estimatorError([])
  let steady = estimatorError([])
  let stateBefore: unknown
  let stateAfter: unknown
  let batchAlone: number | undefined
  let floors: FloorRun[] = []

  log(`${wl.name}: starting the simulator (${wl.profile}, ${r} replica(s), scale ${scale})`)
  // a child this bench stops itself: its exit is not news
  let ending = false
  const ended = () => ending || o.stopping()
  const sim = await spawnChild(
    `simulator ${wl.name}`,
    [
      'sim',
      '--profile',
      wl.profile,
      '--scale',
      String(scale),
      '--seed',
      String(o.file.seed),
      '--replicas',
      String(r),
    ],
    log,
    ended,
  )
  const simUrls = sim.info.url as string
  const model = sim.info.model as string
  const simStatsUrl = sim.info.statsUrl as string
  const probes: Probes = { simStatsUrl }
  const run = (key: string, url: string, segments: Segment[], p: Probes = probes) =>
    runSegments({
      url,
      model,
      tag: `${wl.name}-${key}`,
      scale,
      segments,
      probes: p,
      log,
      label: `${wl.name} ${pathLabel(key)}`,
    })
  const idle = async (what: string, p: Probes = probes) => {
    if (!(await waitIdle(p, 120_000))) log(`warning: not idle 120 s after ${what}`)
  }
  // each level a run of its own from an idle server: an unbounded path has no steady state
  const fresh = async (key: string, url: string) => {
    await run(`${key}-warm`, url, [lead(1000, 'warm-up')])
    await idle(`${key} warm-up`)
    for (const x of o.levels) {
      const res = await run(`${key}-${x}`, url, [level(x)])
      o.keep(key, res)
      record(key, x, res, 0)
      await idle(`${key} ${x}×`)
    }
  }
  // a short lead-in, then the levels back to back: a bounded path is stable
  const backToBack = async (key: string, url: string, first: Segment, p: Probes = probes) => {
    const res = await run(key, url, [first, ...o.levels.map((x) => level(x))], p)
    o.keep(key, res)
    for (const [i, x] of o.levels.entries()) record(key, x, res, i + 1)
    return res
  }
  const peer = async (
    label: string,
    start: () => Promise<RunningPeer>,
    fn: (p: RunningPeer) => Promise<void>,
  ) => {
    let p: RunningPeer
    try {
      p = await start()
    } catch (err) {
      skipped.push(`${label}: ${(err as Error).message.split('\n')[0]}`)
      log(`${wl.name}: skipping ${label}: ${(err as Error).message}`)
      return
    }
    await withChild(o.children, p.child, p.stop, () => fn(p))
  }

  const stopSim = async () => {
    ending = true
    await sim.child.stop()
  }
  await withChild(o.children, sim.child, stopSim, async () => {
    const urls = simUrls.split(',')
    if (o.paths.includes('direct')) await fresh('direct', simUrls)
    if (o.paths.includes('nginx'))
      await peer(
        'nginx',
        () => startPeer(o.root, 'nginx', urls),
        (p) => fresh('nginx', p.origin),
      )
    if (o.paths.includes('haproxy'))
      for (const n of o.file.peers.haproxy_maxconn) {
        const limits = {
          maxconn: n,
          batchMaxconn: o.file.peers.batch_maxconn,
          queueTimeoutMs: o.file.peers.queue_timeout_ms * scale,
          batchQueueTimeoutS: 1800 * scale,
        }
        await peer(
          `HAProxy maxconn ${n}`,
          () => startPeer(o.root, 'haproxy', urls, limits),
          async (p) => {
            await backToBack(haproxyKey(n), p.origin, lead(1000, 'warm-up'))
            await idle(`HAProxy maxconn ${n}`)
          },
        )
      }
    if (o.paths.includes('gateway')) {
      const args = ['gateway', '--sim', simUrls, '--model', model, '--scale', String(scale)]
      if (wl.ttftPer1k !== undefined) args.push('--ttft-per-1k', String(wl.ttftPer1k))
      args.push(...setArgs(o.gatewaySets))
      const gw = await spawnChild(`gateway ${wl.name}`, args, log, ended, cpuProfFlags(o.gatewayCpuProf))
      const adminUrl = gw.info.adminUrl as string
      const stop = (c: typeof gw) => async () => {
        ending = true
        await c.child.stop()
        ending = false
      }
      await withChild(o.children, gw.child, stop(gw), async () => {
        // beside the gateway, a server that only refuses: what a refusal takes here with no gateway work
        const control = await spawnChild(`control ${wl.name}`, ['control'], log, ended)
        const gp: Probes = { simStatsUrl, adminUrl, controlUrl: control.info.url as string }
        await withChild(o.children, control.child, stop(control), async () => {
          stateBefore = await gatewayState(adminUrl)
          const first = lead(w.warmup_s * 1000, 'cold start')
          const segments = [
            first,
            ...o.levels.map((x) => level(x)),
            ...(batchRate > 0 ? [level(0, 'batch alone')] : []),
          ]
          const total = segments.reduce((a, g) => a + segmentMs(g), 0)
          log(
            `${wl.name} gateway: cold start, ${o.levels.length} levels back to back, ${((total * scale) / 1000).toFixed(0)} s`,
          )
          const res = await run('gateway', gw.info.url as string, segments, gp)
          o.keep('gateway', res)
          for (const [i, x] of o.levels.entries()) record('gateway', x, res, i + 1)
          const coldSeg = res.segments[0]
          if (coldSeg !== undefined)
            cold = segmentMetrics(coldSeg, res.outcomes, slos, scale).perClass.interactive.estimator
          steady = estimatorError(
            levels.flatMap((l) => [...(l.runs.gateway?.perClass.interactive.estimator.signed ?? [])]),
          )
          const alone = res.segments[o.levels.length + 1]
          if (alone !== undefined)
            batchAlone = segmentMetrics(alone, res.outcomes, slos, scale).perClass.batch.throughputTokS
          stateAfter = await gatewayState(adminUrl)
          await idle('the gateway run', gp)
        })
      })
    }
    if (o.paths.includes('floors'))
      floors = await runFloors({
        minShares: o.minShares,
        simUrl: simUrls,
        simStatsUrl,
        model,
        scale,
        segments: [lead(w.warmup_s * 1000, 'warm-up'), ...o.levels.map((x) => level(x))],
        levels: o.levels,
        slos,
        log,
        stopping: o.stopping,
        children: o.children,
        ...(o.gatewaySets === undefined ? {} : { gatewaySets: o.gatewaySets }),
        ...(o.gatewayCpuProf === undefined ? {} : { gatewayCpuProf: o.gatewayCpuProf }),
      })
  })
  return {
    levels,
    capacity,
    batchRate,
    reference,
    cold,
    steady,
    ...(stateBefore === undefined ? {} : { stateBefore, stateAfter }),
    ...(batchAlone === undefined ? {} : { batchAlone }),
    floors,
    skipped,
  }
}
