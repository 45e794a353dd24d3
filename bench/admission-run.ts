/**
 * One run of the admission bench: a sequence of segments (load levels) played open-loop against
 * one target, at wall time = model time × scale, then cut off.
 *
 * A segment (model time): [0, settle) the load settles, not judged; [settle, settle + measure)
 * the measured window: requests that arrive in it are judged, tokens that reach the client in it
 * count as throughput; [.., + tail) the load goes on so the measured requests are judged under the
 * same load (on what they streamed until the tail's end). The next segment follows without a
 * pause. At the end of the last segment every request still open is aborted (the client goes
 * away, so the server frees its KV cache), and the caller waits until everything is idle.
 */

import { extname } from 'node:path'
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { Pool, request } from 'undici'
import { parsePromText } from '../src/backends/prom-text.js'
import type { BatchWorkerData, BatchWorkerMessage, BatchWorkerStart } from './admission-batch-worker.js'
import { arrivedIn, isRefusal, type Outcome } from './admission-client.js'
import { playSchedule, type Scheduled, type Sent } from './admission-sender.js'
import type { Arrival } from './admission-workload.js'

export interface Segment {
  readonly name: string
  /** Judged (false: a warm-up). */
  readonly measured: boolean
  readonly settleMs: number
  readonly measureMs: number
  readonly tailMs: number
  /** Arrival times relative to the segment's start, within its duration. */
  readonly arrivals: readonly Arrival[]
}

/** A segment placed on the run's timeline (model ms from the run's start). */
export interface Window {
  readonly fromMs: number
  readonly toMs: number
  /**
   * The window's length, ms: the segment's measureMs, the same number on every path. Rates
   * are divided by this, not by toMs - fromMs: the segments before it differ between paths (a
   * 30 s cold start before the gateway's, 1 s of warm-up before HAProxy's), and the difference
   * of the two sums then differs in its last bits, so equal counts gave a ratio of
   * 0.9999999999999998 and a tie was judged missed (70b at 0.5x: 49 good requests each).
   */
  readonly spanMs: number
  /** Streams are judged on what reached the client until here. */
  readonly judgeUntilMs: number
}

export const segmentMs = (s: Segment) => s.settleMs + s.measureMs + s.tailMs

export interface SimStats {
  readonly busyMs: number
  readonly running: number
  readonly waiting: number
  /** Sequences the engines preempted for KV room so far (all replicas). */
  readonly preemptions: number
  readonly lagP50Ms: number
  readonly lagP99Ms: number
  readonly lagCount: number
}

export interface Probes {
  /** The simulator's stats listener. */
  readonly simStatsUrl: string
  /** The gateway's admin listener, when the run goes through it. */
  readonly adminUrl?: string
  /** A server that refuses at once (admission-child.ts control): probed in each measured window. */
  readonly controlUrl?: string
}

/** Counters read at the start and end of a measured window. */
export interface Snapshot {
  readonly atMs: number
  readonly sim: SimStats
  /** slo_gateway_backend_busy_seconds_total summed over backends (gateway runs). */
  readonly gatewayBusyS?: number
  /** The gateway process's CPU seconds (process_cpu_seconds_total; gateway runs). */
  readonly gatewayCpuS?: number
  /**
   * The gateway's event-loop delay p99 since the previous /metrics read, wall ms
   * (nodejs_eventloop_lag_p99_seconds less its 10 ms sampling interval: prom-client resets it
   * at each read), so at a window's end: over that window.
   */
  readonly gatewayLoopP99Ms?: number
  /** The pool's estimator and queues (gateway runs). */
  readonly estimator?: EstimatorState
  readonly queues?: Record<string, { queued: number; inflight: number }>
  /** The endpoint's live inter-token latency by the decode guard, wall ms (null: unmeasured). */
  readonly itlMs?: number | null
  /** Interactive's TTFT margin (the configured one, widened while admitted requests miss). */
  readonly margin?: number
  /** Interactive's TPOT margin (the decode guard's; widened while admitted streams miss). */
  readonly tpotMargin?: number
  /** The margin of batch's objective below interactive (admission.decode_headroom_below). */
  readonly batchBelowMargin?: number
}

export interface SegmentResult {
  readonly segment: Segment
  readonly window: Window
  /** Requests of this segment. */
  readonly outcomes: readonly Outcome[]
  readonly start: Snapshot
  readonly end: Snapshot
  /** Step lag of the simulator over the segment (wall ms). */
  readonly lagP99Ms: number
  /** How late this segment's requests were sent against their schedule (wall ms), p99. */
  readonly sendLagP99Ms: number
  /** The load generator's own event-loop delay over the window, p99 (wall ms). */
  readonly clientLoopP99Ms: number
  /** The control's refusals over the window, from the interactive thread: p99 from send to headers (wall ms; NaN: none). */
  readonly controlP99Ms: number
  /** Refusals in the window sent again after their Retry-After, or half of it (RETRY_SPACING_MS apart). */
  readonly retries: readonly Retried[]
  /** Refusals the spacing allowed a retry for whose wait would end after this level: not sent again. */
  readonly retryBeyondLevel: number
}

/**
 * A refused interactive request sent again, as a client honouring the refusal's Retry-After
 * does (`at`), or after half of it (`half`: were the gateway's wait too long, the earlier
 * retry would fare as well).
 */
export interface Retried {
  readonly arm: 'at' | 'half'
  /** The refusal's `retry-after-ms`, wall ms. */
  readonly retryAfterMs: number
  readonly outcome: Outcome
}

/**
 * Retries of refusals go at most this often per level (wall ms): a few per window tell whether
 * Retry-After is honest, without adding the load of every refused client coming back (the
 * generic proxies' runs have none; their 503s carry no Retry-After).
 */
export const RETRY_SPACING_MS = 200

export interface RunResult {
  readonly segments: readonly SegmentResult[]
  /** Every request of the run (tokens of any segment count as throughput in any window). */
  readonly outcomes: readonly Outcome[]
  readonly wallMs: number
}

async function getJson(url: string): Promise<unknown> {
  const res = await request(url, { headersTimeout: 10_000, bodyTimeout: 10_000 })
  return res.body.json()
}

export async function simStats(url: string): Promise<SimStats> {
  return (await getJson(`${url}/stats`)) as SimStats
}

/** How often the control is probed in a measured window, wall ms (one probe open at a time). */
export const CONTROL_EVERY_MS = 20
/** A probe's body: the size of a short chat request (the control reads it, as the gateway reads a prompt). */
const CONTROL_BODY = JSON.stringify({
  model: 'control',
  messages: [{ role: 'user', content: 'x'.repeat(900) }],
})

/**
 * Probes the control from this thread (the interactive sender's) from `fromMs` to `toMs` of
 * the run (wall ms after `t0`): what a refusal takes here from a server with nothing else to
 * do, behind the same load generator, on the same cores. Resolves to the p99 (NaN: none).
 */
async function probeControl(url: string, t0: number, fromMs: number, toMs: number): Promise<number> {
  const until = (ms: number) => sleep(Math.max(0, ms - (performance.now() - t0)))
  const pool = new Pool(url, { connections: 1, pipelining: 1 })
  /** One refusal: ms from the send to its headers (as a refusal at arrival is timed). */
  const probe = async () => {
    const sent = performance.now()
    const res = await request(url, {
      method: 'POST',
      dispatcher: pool,
      headers: { 'content-type': 'application/json' },
      body: CONTROL_BODY,
    })
    const ms = performance.now() - sent
    await res.body.dump()
    return ms
  }
  const took: number[] = []
  try {
    // one probe just before the window opens the connection: the window's are all on it, as most refusals are
    await until(fromMs - 100)
    await probe()
    await until(fromMs)
    while (performance.now() - t0 < toMs) {
      took.push(await probe())
      await sleep(CONTROL_EVERY_MS)
    }
  } finally {
    await pool.close()
  }
  return took.length === 0 ? Number.NaN : p99(took)
}

/** prom-client's event-loop sampling interval, ms (the gateway keeps its default). */
const LOOP_SAMPLE_MS = 10

const COUNTERS = new Set([
  'slo_gateway_backend_busy_seconds_total',
  'process_cpu_seconds_total',
  'nodejs_eventloop_lag_p99_seconds',
])

interface GatewayCounters {
  readonly gatewayBusyS: number
  readonly gatewayCpuS?: number
  readonly gatewayLoopP99Ms?: number
}

/** What the bench reads of the gateway's /metrics: its backends' busy time, its own CPU and event-loop delay. */
async function gatewayCounters(adminUrl: string): Promise<GatewayCounters> {
  const res = await request(`${adminUrl}/metrics`)
  const { samples } = parsePromText(await res.body.text(), (name) => COUNTERS.has(name))
  const values = (name: string) => (samples.get(name) ?? []).map((x) => x.value)
  const busy = values('slo_gateway_backend_busy_seconds_total').reduce((a, b) => a + b, 0)
  const cpu = values('process_cpu_seconds_total')[0]
  // prom-client times a timer every 10 ms (its default eventLoopMonitoringPrecision) and reports
  // the whole interval: an idle loop reads ~10-11 ms; the delay is what is beyond it
  const lagS = values('nodejs_eventloop_lag_p99_seconds')[0]
  return {
    gatewayBusyS: busy,
    ...(cpu !== undefined ? { gatewayCpuS: cpu } : {}),
    ...(lagS !== undefined ? { gatewayLoopP99Ms: Math.max(0, lagS * 1000 - LOOP_SAMPLE_MS) } : {}),
  }
}

/** An event-loop delay histogram's p99 beyond its timer's interval (as the gateway's, above), wall ms. */
function loopP99Ms(h: IntervalHistogram): number {
  return h.count === 0 ? Number.NaN : Math.max(0, h.percentile(99) / 1e6 - LOOP_SAMPLE_MS)
}

async function snapshot(p: Probes, t0: number): Promise<Snapshot> {
  const [sim, counters, state] = await Promise.all([
    simStats(p.simStatsUrl),
    p.adminUrl === undefined ? Promise.resolve(undefined) : gatewayCounters(p.adminUrl),
    p.adminUrl === undefined ? Promise.resolve(undefined) : gatewayState(p.adminUrl),
  ])
  const pool = state?.admission?.pools?.[0]
  return {
    atMs: performance.now() - t0,
    sim,
    ...counters,
    ...(pool?.estimator !== undefined ? { estimator: pool.estimator as EstimatorState } : {}),
    ...(pool?.classes !== undefined ? { queues: pool.classes } : {}),
    ...(pool?.itlMs !== undefined ? { itlMs: Object.values(pool.itlMs)[0] ?? null } : {}),
    ...(pool?.ttftMargin?.interactive !== undefined ? { margin: pool.ttftMargin.interactive } : {}),
    ...(pool?.tpotMargin?.interactive !== undefined ? { tpotMargin: pool.tpotMargin.interactive } : {}),
    ...(pool?.tpotMargin?.['batch:below'] !== undefined
      ? { batchBelowMargin: pool.tpotMargin['batch:below'] }
      : {}),
  }
}

/** The calibration /admin/state shows (wall ms). */
export interface EstimatorState {
  readonly dispatchTokensPerMs: number
  readonly alphaMs: number
  readonly betaMsPerToken: number
  readonly gammaSteps: number
  readonly deltaResidual: number
  readonly samples: number
  readonly meanAbsRelativeError: number
}

interface AdmissionState {
  admission?: {
    pools?: {
      classes?: Record<string, { queued: number; inflight: number }>
      estimator?: unknown
      itlMs?: Record<string, number | null>
      ttftMargin?: Record<string, number>
      tpotMargin?: Record<string, number>
    }[]
  }
}

export async function gatewayState(adminUrl: string): Promise<AdmissionState> {
  return (await getJson(`${adminUrl}/admin/state`)) as AdmissionState
}

/** Waits until the simulator runs nothing and the gateway holds nothing (or timeoutMs). */
export async function waitIdle(p: Probes, timeoutMs: number): Promise<boolean> {
  const until = performance.now() + timeoutMs
  while (performance.now() < until) {
    const s = await simStats(p.simStatsUrl)
    let held = 0
    if (p.adminUrl !== undefined) {
      const st = await gatewayState(p.adminUrl)
      for (const pool of st.admission?.pools ?? [])
        for (const c of Object.values(pool.classes ?? {})) held += c.queued + c.inflight
    }
    if (s.running === 0 && s.waiting === 0 && held === 0) return true
    await sleep(100)
  }
  return false
}

export interface RunOptions {
  /** Where to send; several comma-separated: round-robin over them (a client-side balancer). */
  readonly url: string
  readonly model: string
  /** Prefix of every prompt's tag (unique per run). */
  readonly tag: string
  readonly scale: number
  readonly segments: readonly Segment[]
  readonly probes: Probes
  readonly log: (s: string) => void
  readonly label: string
}

interface BatchWorker {
  /** Its latest progress report. */
  progress: { sent: number; ended: number }
  readonly done: Promise<Extract<BatchWorkerMessage, { kind: 'done' }>>
  /** Starts its schedule from this thread's `t0`. */
  start(t0: number): void
}

const WORKER_BOOT = new URL('./worker-boot.mjs', import.meta.url)
// the worker's entry, in the form this module runs from (.ts under tsx)
const BATCH_WORKER = new URL(
  `./admission-batch-worker${extname(fileURLToPath(import.meta.url))}`,
  import.meta.url,
)

/** Starts the batch sender's thread on `schedule`; resolves once it is ready to start. */
async function startBatchWorker(
  options: BatchWorkerData['options'],
  schedule: readonly Scheduled[],
): Promise<BatchWorker> {
  const data: BatchWorkerData = { entry: BATCH_WORKER.href, options, schedule }
  const worker = new Worker(WORKER_BOOT, { workerData: data })
  let ready = () => {}
  const isReady = new Promise<void>((resolve) => {
    ready = resolve
  })
  const w: BatchWorker = {
    progress: { sent: 0, ended: 0 },
    done: new Promise((resolve, reject) => {
      worker.on('message', (m: BatchWorkerMessage) => {
        if (m.kind === 'ready') ready()
        else if (m.kind === 'progress') w.progress = { sent: m.sent, ended: m.ended }
        else {
          resolve(m)
          void worker.terminate()
        }
      })
      worker.on('error', reject)
      worker.on('exit', (code) =>
        reject(new Error(`the batch sender's thread exited (${code}) before its outcomes`)),
      )
    }),
    start: (t0) => worker.postMessage({ t0Epoch: performance.timeOrigin + t0 } satisfies BatchWorkerStart),
  }
  await Promise.race([isReady, w.done])
  return w
}

/** Each segment's start on the run's timeline (model ms from its start), and the run's end. */
function timeline(segments: readonly Segment[]): { starts: number[]; endMs: number } {
  const starts: number[] = []
  let at = 0
  for (const seg of segments) {
    starts.push(at)
    at += segmentMs(seg)
  }
  return { starts, endMs: at }
}

/** Every arrival of `segments` placed at its segment's start, in time order. */
function place(segments: readonly Segment[], starts: readonly number[], tag: string): Scheduled[] {
  return segments.flatMap((seg, i) =>
    seg.arrivals.map((rel) => ({
      seg: i,
      tag: `${tag}-${i}`,
      arrival: { ...rel, atMs: rel.atMs + (starts[i] as number) },
    })),
  )
}

function p99(values: number[]): number {
  values.sort((a, b) => a - b)
  return values[Math.floor(0.99 * (values.length - 1))] ?? 0
}

export async function runSegments(o: RunOptions): Promise<RunResult> {
  const s = o.scale
  const { starts, endMs } = timeline(o.segments)
  const schedule = place(o.segments, starts, o.tag)
  // batch from a worker thread, interactive from this one (admission-sender.ts)
  const batch = await startBatchWorker(
    { url: o.url, model: o.model, scale: s, endMs },
    schedule.filter((a) => a.arrival.cls === 'batch'),
  )
  const perSegment: Outcome[][] = o.segments.map(() => [])
  const all: Outcome[] = []
  const t0 = performance.now()
  batch.start(t0)
  // the load generator's own loop (the interactive sender's): a response it has not read yet
  // is timed late by as much
  const clientLoop = monitorEventLoopDelay({ resolution: LOOP_SAMPLE_MS })
  clientLoop.enable()
  // timeline, and the window snapshots, read on time whatever the sending loop is doing
  const placed = o.segments.map((seg, i) => {
    const start = starts[i] as number
    const window: Window = {
      fromMs: start + seg.settleMs,
      toMs: start + seg.settleMs + seg.measureMs,
      spanMs: seg.measureMs,
      judgeUntilMs: start + segmentMs(seg),
    }
    const snap = (ms: number) => {
      const p = sleep(ms * s).then(() => snapshot(o.probes, t0))
      p.catch(() => {}) // awaited below; no unhandled rejection meanwhile
      return p
    }
    const lagReset = sleep(start * s).then(() =>
      request(`${o.probes.simStatsUrl}/reset`, { method: 'POST' }).then((r) => r.body.dump()),
    )
    lagReset.catch(() => {})
    const lagRead = sleep(window.judgeUntilMs * s - 5).then(() => simStats(o.probes.simStatsUrl))
    lagRead.catch(() => {})
    void sleep(window.fromMs * s).then(() => clientLoop.reset())
    const clientLoopRead = sleep(window.toMs * s).then(() => loopP99Ms(clientLoop))
    const control =
      o.probes.controlUrl === undefined
        ? Promise.resolve(Number.NaN)
        : probeControl(o.probes.controlUrl, t0, window.fromMs * s, window.toMs * s)
    control.catch(() => {})
    return {
      seg,
      start,
      window,
      first: snap(window.fromMs),
      last: snap(window.toMs),
      lagRead,
      clientLoopRead,
      control,
      sendLag: [] as number[],
      retries: [] as Promise<Retried>[],
      retryBeyondLevel: 0,
      lastRetryMs: Number.NEGATIVE_INFINITY,
    }
  })
  /** Sends a refusal in its level's window again after its Retry-After (or half), spaced and within the level. */
  const maybeRetry = (seg: number, r: Outcome, again: Sent['again']) => {
    const p = placed[seg]
    const w = p?.window
    if (p === undefined || w === undefined || r.retryAfterMs === undefined) return
    if (r.arrival.cls !== 'interactive' || !isRefusal(r) || !arrivedIn(r, w)) return
    const now = performance.now() - t0
    if (now - p.lastRetryMs < RETRY_SPACING_MS) return
    // both arms from the same refusals: those whose whole wait ends within the level
    if (now + r.retryAfterMs > w.judgeUntilMs * s) {
      p.retryBeyondLevel++
      return
    }
    const arm = p.retries.length % 2 === 0 ? 'at' : 'half'
    const retried = again(arm === 'at' ? r.retryAfterMs : r.retryAfterMs / 2)
    if (retried === undefined) return
    p.lastRetryMs = now
    const retryAfterMs = r.retryAfterMs
    p.retries.push(retried.then((outcome) => ({ arm, retryAfterMs, outcome })))
  }
  let lastLog = 0
  let sent = 0
  let ended = 0
  await playSchedule(
    { url: o.url, model: o.model, scale: s, endMs, t0 },
    schedule.filter((a) => a.arrival.cls !== 'batch'),
    ({ seg, lagMs, outcome, again }) => {
      placed[seg]?.sendLag.push(lagMs)
      sent++
      void outcome.then((r) => {
        perSegment[seg]?.push(r)
        all.push(r)
        ended++
        maybeRetry(seg, r, again)
      })
      const now = performance.now() - t0
      if (now - lastLog > 15_000) {
        lastLog = now
        const b = batch.progress
        o.log(
          `${o.label} ${placed[seg]?.seg.name}: ${(now / 1000).toFixed(0)} s of ${((endMs * s) / 1000).toFixed(0)}, ` +
            `sent ${sent + b.sent}, open ${sent - ended + b.sent - b.ended}`,
        )
      }
    },
  )
  const fromWorker = await batch.done
  for (const { seg, outcome } of fromWorker.outcomes) {
    perSegment[seg]?.push(outcome)
    all.push(outcome)
  }
  for (const { seg, lagMs } of fromWorker.lags) placed[seg]?.sendLag.push(lagMs)
  const wallMs = performance.now() - t0
  clientLoop.disable()
  const segments: SegmentResult[] = []
  for (const [i, p] of placed.entries()) {
    segments.push({
      segment: p.seg,
      window: p.window,
      outcomes: perSegment[i] as Outcome[],
      start: await p.first,
      end: await p.last,
      lagP99Ms: (await p.lagRead).lagP99Ms,
      sendLagP99Ms: p99(p.sendLag),
      clientLoopP99Ms: await p.clientLoopRead,
      controlP99Ms: await p.control.catch(() => Number.NaN),
      retries: await Promise.all(p.retries),
      retryBeyondLevel: p.retryBeyondLevel,
    })
  }
  return { segments, outcomes: all, wallMs }
}
