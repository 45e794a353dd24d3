/**
 * The overhead bench's measurements: slices of a closed loop, an open loop and SSE streams
 * against one target, each after a short warm-up, with the proxy's CPU time read around
 * the measured part. The bench interleaves slices of all targets so that noise from the
 * shared machine falls on all of them alike.
 */
import type { Pool } from 'undici'
import {
  closedLoop,
  connect,
  type LoadResult,
  openLoop,
  type RequestSpec,
  succeeded,
} from '../src/loadgen/load-client.js'
import { fmt, median, percentile, sorted } from '../src/loadgen/report.js'
import { coreBusyMs, treeCpuMs } from './processes.js'
import type { Target, TargetKey } from './targets.js'

export interface Profile {
  readonly rounds: number
  /** Warm-up before each slice, ms. */
  readonly warmupMs: number
  /**
   * Warm-up of each target before the first round: this many small requests (the gateway's
   * CPU per request settles only after some thousands: JIT), within a time cap, then streams.
   */
  readonly initialWarmupRequests: number
  readonly initialWarmupCapMs: number
  /**
   * Closed loop: duration of a slice (the same time, hence the same exposure to the
   * machine's noise, for every target) and workers.
   */
  readonly closedMs: number
  readonly concurrency: number
  /** Open loop: offered rate and duration. */
  readonly ratePerS: number
  readonly openMs: number
  /** Streams: concurrent streams, duration, and the upstream's shape. */
  readonly streamConcurrency: number
  readonly streamMs: number
  readonly chunks: number
  readonly intervalMs: number
}

export interface PhaseStats {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly ok: number
  readonly failed: number
  /** Proxy CPU per successful request, µs (NaN for the upstream itself). */
  readonly cpuUs: number
  /** Proxy CPU time / wall time of the phase (1 = one core busy). */
  readonly busy: number
  /** Open loop: p99 of the dispatch lag behind schedule, ms. */
  readonly lagP99: number
  /** Share of the proxy's core used by other processes during the phase (noise), 0..1. */
  readonly others: number
  /** Share of the client's core used by other processes (not client or upstream), 0..1. */
  readonly othersClient: number
}

export interface StreamStats {
  /** Upstream-stamp-to-client delay of each chunk, ms. */
  readonly delayP50: number
  readonly delayP99: number
  readonly delayMean: number
  readonly chunks: number
  readonly streams: number
  readonly failed: number
  /** Median data events per successful stream (the trivial upstream sends `chunks`). */
  readonly eventsPerStream: number
  readonly cpuUsPerChunk: number
  /** Share of the proxy's core used by other processes during the phase (noise), 0..1. */
  readonly others: number
  /** Share of the client's core used by other processes (not client or upstream), 0..1. */
  readonly othersClient: number
}

export interface RoundResult {
  readonly closed: PhaseStats
  readonly open: PhaseStats
  readonly stream: StreamStats
}

const chat = (stream: boolean, maxTokens: number) =>
  JSON.stringify({
    model: 'bench-model',
    messages: [{ role: 'user', content: 'Say ok.' }],
    max_tokens: maxTokens,
    ...(stream ? { stream: true } : {}),
  })

const headers = { 'content-type': 'application/json' }

/** Which cores the bench pinned what to (undefined when not pinned). */
export interface Pinning {
  /** The proxies' core. */
  readonly proxyCore: number
  /** The core of the load client and the upstream, and their pids. */
  readonly clientCore: number
  readonly clientPids: readonly number[]
}

interface Cpu {
  /** The proxy's process tree, ms (NaN for the upstream itself). */
  readonly proxyMs: number
  /** Everything else on the proxy's core, ms (NaN when not pinned). */
  readonly othersMs: number
  /** Everything but the client and the upstream on their core, ms (NaN when not pinned). */
  readonly othersClientMs: number
}

async function cpuAround<T>(
  target: Target,
  pin: Pinning | undefined,
  run: () => Promise<T>,
): Promise<[T, Cpu]> {
  const pid = target.child?.pid
  const sample = () => ({
    proxy: pid === undefined ? Number.NaN : treeCpuMs(pid),
    core: pin === undefined ? Number.NaN : coreBusyMs(pin.proxyCore),
    clientCore: pin === undefined ? Number.NaN : coreBusyMs(pin.clientCore),
    client: (pin?.clientPids ?? []).reduce((a, p) => a + treeCpuMs(p), 0),
  })
  const a = sample()
  const out = await run()
  const b = sample()
  const proxyMs = b.proxy - a.proxy
  const others = b.core - a.core - (Number.isNaN(proxyMs) ? 0 : proxyMs)
  const othersClient = b.clientCore - a.clientCore - (b.client - a.client)
  return [out, { proxyMs, othersMs: Math.max(0, others), othersClientMs: Math.max(0, othersClient) }]
}

function phaseStats(r: LoadResult, cpu: Cpu): PhaseStats {
  const cpuMs = cpu.proxyMs
  const ok = r.records.filter(succeeded)
  const lat = sorted(ok.map((x) => x.latencyMs))
  return {
    rps: (ok.length * 1000) / r.elapsedMs,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    ok: ok.length,
    failed: r.records.length - ok.length,
    cpuUs: (cpuMs * 1000) / ok.length,
    busy: cpuMs / r.elapsedMs,
    lagP99: r.lagMs === undefined ? Number.NaN : percentile(sorted(r.lagMs), 99),
    others: cpu.othersMs / r.elapsedMs,
    othersClient: cpu.othersClientMs / r.elapsedMs,
  }
}

function streamStats(r: LoadResult, cpu: Cpu): StreamStats {
  const cpuMs = cpu.proxyMs
  const ok = r.records.filter(succeeded)
  const delays = sorted(ok.flatMap((x) => x.stampDelaysMs ?? []))
  let sum = 0
  for (const d of delays) sum += d
  return {
    delayP50: percentile(delays, 50),
    delayP99: percentile(delays, 99),
    delayMean: sum / delays.length,
    chunks: delays.length,
    streams: ok.length,
    failed: r.records.length - ok.length,
    eventsPerStream: median(ok.map((x) => x.eventsMs?.length ?? 0)),
    cpuUsPerChunk: (cpuMs * 1000) / delays.length,
    others: cpu.othersMs / r.elapsedMs,
    othersClient: cpu.othersClientMs / r.elapsedMs,
  }
}

const small: RequestSpec = { path: '/v1/chat/completions', body: chat(false, 1), headers }
const sse = (p: Profile): RequestSpec => ({
  path: '/v1/chat/completions',
  body: chat(true, p.chunks),
  headers,
  stream: true,
})

/** The long-lived client of one target, shared by its warm-up and all its slices. */
export function clientFor(target: Target, p: Profile): Pool {
  return connect(target.origin, Math.max(64, p.concurrency, p.streamConcurrency))
}

/** Once before the rounds: warms the JIT of the client and of the target, discarded. */
export async function warmUp(client: Pool, p: Profile): Promise<void> {
  await closedLoop({
    client,
    request: small,
    concurrency: p.concurrency,
    requests: p.initialWarmupRequests,
    durationMs: p.initialWarmupCapMs,
  })
  await closedLoop({ client, request: sse(p), concurrency: p.streamConcurrency, durationMs: 500 })
}

/** One measurement slice of a phase against one target. */
export interface Slice {
  readonly target: Target
  readonly client: Pool
  readonly profile: Profile
  readonly pinning: Pinning | undefined
}

/** Small requests, closed loop: a short warm-up, then `closedMs` of requests. */
export async function closedSlice({ target, client, profile: p, pinning }: Slice): Promise<PhaseStats> {
  await closedLoop({ client, request: small, concurrency: p.concurrency, durationMs: p.warmupMs })
  const [run, cpu] = await cpuAround(target, pinning, () =>
    closedLoop({ client, request: small, concurrency: p.concurrency, durationMs: p.closedMs }),
  )
  return phaseStats(run, cpu)
}

/** Small requests, open loop at `ratePerS` for `openMs`, after a short warm-up at that rate. */
export async function openSlice({ target, client, profile: p, pinning }: Slice): Promise<PhaseStats> {
  await openLoop({ client, request: small, ratePerS: p.ratePerS, durationMs: p.warmupMs })
  const [run, cpu] = await cpuAround(target, pinning, () =>
    openLoop({ client, request: small, ratePerS: p.ratePerS, durationMs: p.openMs }),
  )
  return phaseStats(run, cpu)
}

/** SSE streams, closed loop of `streamConcurrency` streams for `streamMs`, after a short warm-up. */
export async function streamSlice({ target, client, profile: p, pinning }: Slice): Promise<StreamStats> {
  await closedLoop({ client, request: sse(p), concurrency: p.streamConcurrency, durationMs: p.warmupMs })
  const [run, cpu] = await cpuAround(target, pinning, () =>
    closedLoop({ client, request: sse(p), concurrency: p.streamConcurrency, durationMs: p.streamMs }),
  )
  return streamStats(run, cpu)
}

interface PerTarget {
  closed: PhaseStats[]
  open: PhaseStats[]
  stream: StreamStats[]
}

/** Per target: its label and one result per round. */
export type Results = Map<TargetKey, { label: string; rounds: RoundResult[] }>

/**
 * Phase by phase, round by round, one slice per target (order rotated each round), so
 * the slices compared with each other are seconds apart and share the machine's noise.
 */
export async function measureAll(
  targets: readonly Target[],
  p: Profile,
  pinning: Pinning | undefined,
  log: (line: string) => void,
): Promise<Results> {
  const clients = new Map(targets.map((t) => [t.key, clientFor(t, p)]))
  const acc = new Map<TargetKey, PerTarget>(targets.map((t) => [t.key, { closed: [], open: [], stream: [] }]))
  const phase = async <S>(
    name: keyof PerTarget,
    slice: (s: Slice) => Promise<S>,
    line: (s: S) => string,
  ): Promise<void> => {
    for (let round = 0; round < p.rounds; round++) {
      const parts: string[] = []
      for (let i = 0; i < targets.length; i++) {
        const target = targets[(i + round) % targets.length]!
        const stats = await slice({ target, client: clients.get(target.key) as Pool, profile: p, pinning })
        ;(acc.get(target.key)?.[name] as S[])[round] = stats
        parts.push(`${target.key} ${line(stats)}`)
      }
      log(`${name} round ${round + 1}/${p.rounds}: ${parts.join('; ')}`)
    }
  }
  try {
    for (const t of targets) {
      log(
        `warm-up ${t.key} (${p.initialWarmupRequests} requests or ${p.initialWarmupCapMs / 1000} s, then streams; discarded)`,
      )
      await warmUp(clients.get(t.key) as Pool, p)
    }
    await phase(
      'closed',
      closedSlice,
      (s) => `${fmt(s.rps, 0)} req/s p99 ${fmt(s.p99)} ms${s.failed ? ` FAILED ${s.failed}` : ''}`,
    )
    await phase(
      'open',
      openSlice,
      (s) => `p50 ${fmt(s.p50, 3)} p99 ${fmt(s.p99, 3)} ms${s.failed ? ` FAILED ${s.failed}` : ''}`,
    )
    await phase(
      'stream',
      streamSlice,
      (s) =>
        `chunk p50 ${fmt(s.delayP50, 3)} p99 ${fmt(s.delayP99, 3)} ms${s.failed ? ` FAILED ${s.failed}` : ''}`,
    )
  } finally {
    await Promise.all([...clients.values()].map((c) => c.close()))
  }
  const results: Results = new Map()
  for (const t of targets) {
    const a = acc.get(t.key) as PerTarget
    results.set(t.key, {
      label: t.label,
      rounds: a.closed.map((closed, i) => ({
        closed,
        open: a.open[i]!,
        stream: a.stream[i]!,
      })),
    })
  }
  return results
}
