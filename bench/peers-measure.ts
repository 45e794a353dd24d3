/**
 * bench:peers:overhead's measurements of one target at one request-body size: four slices,
 * each after a short warm-up of its own, with the proxy's CPU time read around it.
 *
 * - saturation: small answers, closed loop of `concurrency` workers: req/s, p50/p99, CPU/req
 * - fixed rate: small answers, open loop at each of `rates` req/s: p50/p99 from dispatch
 * - stream saturation: SSE streams, closed loop of `streamConcurrency`: streams/s, CPU/stream
 * - stream at a fixed rate: SSE streams, open loop at `streamRate`/s: time to first chunk
 *   (dispatch to the first data event) and each chunk's delay (the upstream's write stamp to
 *   its arrival at the client)
 */
import type { Pool } from 'undici'
import {
  closedLoop,
  type LoadResult,
  openLoop,
  type RequestSpec,
  succeeded,
} from '../src/loadgen/load-client.js'
import { percentile, sorted } from '../src/loadgen/report.js'
import { treeCpuMs } from './processes.js'
import type { Target } from './targets.js'

export interface PeersProfile {
  readonly rounds: number
  readonly warmupMs: number
  /** Before the first round, per target: small requests for this long (JIT), discarded. */
  readonly initialWarmupMs: number
  readonly sliceMs: number
  readonly concurrency: number
  readonly rates: readonly number[]
  readonly streamConcurrency: number
  readonly streamRate: number
  /** The trivial upstream's stream shape. */
  readonly chunks: number
  readonly intervalMs: number
}

export interface SizeStats {
  readonly satRps: number
  readonly satP50: number
  readonly satP99: number
  /** Proxy CPU per request at saturation, µs (NaN for the upstream itself). */
  readonly cpuUsPerReq: number
  /** Per fixed rate: p50, p99 (ms) and failures. */
  readonly fixed: readonly {
    readonly rate: number
    readonly p50: number
    readonly p99: number
    /** Proxy CPU per request at this rate, µs (NaN for the upstream itself). */
    readonly cpuUs: number
    readonly failed: number
  }[]
  readonly streamsPerS: number
  readonly cpuUsPerStream: number
  readonly ttfcP50: number
  readonly ttfcP99: number
  readonly chunkP50: number
  readonly chunkP99: number
  /** Every failed request of the round at this size. */
  readonly failed: number
}

/** Fixed rates whose bytes per second exceed this are skipped (rate x body size). */
export const MAX_BYTES_PER_S = 64 * 2 ** 20

/** A chat request whose JSON body is `bytes` long (± a few), the prompt padded with text. */
export function chatBody(bytes: number, stream: boolean, chunks: number): string {
  const base = {
    model: 'bench-model',
    messages: [{ role: 'user', content: '' }],
    max_tokens: stream ? chunks : 1,
    ...(stream ? { stream: true } : {}),
  }
  const empty = JSON.stringify(base).length
  const words = 'the quick brown fox jumps over the lazy dog while the bench measures proxies '
  const n = Math.max(0, bytes - empty)
  base.messages[0]!.content = words.repeat(Math.ceil(n / words.length)).slice(0, n)
  return JSON.stringify(base)
}

function spec(t: Target, body: string, stream: boolean): RequestSpec {
  return {
    path: '/v1/chat/completions',
    body,
    headers: { 'content-type': 'application/json', ...(t.headers ?? {}) },
    ...(stream ? { stream: true } : {}),
  }
}

async function withCpu(t: Target, run: () => Promise<LoadResult>): Promise<[LoadResult, number]> {
  const pid = t.child?.pid
  const a = pid === undefined ? Number.NaN : treeCpuMs(pid)
  const r = await run()
  const b = pid === undefined ? Number.NaN : treeCpuMs(pid)
  return [r, b - a]
}

const okOf = (r: LoadResult) => r.records.filter(succeeded)
const failedOf = (r: LoadResult) => r.records.length - okOf(r).length
const lat = (r: LoadResult) => sorted(okOf(r).map((x) => x.latencyMs))

/** The round's four slices against one target at one size. */
export async function measureSize(
  client: Pool,
  t: Target,
  bytes: number,
  p: PeersProfile,
): Promise<SizeStats> {
  const plain = spec(t, chatBody(bytes, false, p.chunks), false)
  const sse = spec(t, chatBody(bytes, true, p.chunks), true)
  const closed = (request: RequestSpec, concurrency: number, durationMs: number) =>
    closedLoop({ client, request, concurrency, durationMs })
  const open = (request: RequestSpec, ratePerS: number, durationMs: number) =>
    openLoop({ client, request, ratePerS, durationMs })

  await closed(plain, p.concurrency, p.warmupMs)
  const [sat, satCpu] = await withCpu(t, () => closed(plain, p.concurrency, p.sliceMs))
  const satLat = lat(sat)
  const fixed = []
  for (const rate of p.rates) {
    if (rate * bytes > MAX_BYTES_PER_S) {
      // more than the upstream alone can take (it serves ~500 req/s of 200 KB): not measured
      fixed.push({ rate, p50: Number.NaN, p99: Number.NaN, cpuUs: Number.NaN, failed: 0 })
      continue
    }
    await open(plain, rate, p.warmupMs)
    const [r, cpu] = await withCpu(t, () => open(plain, rate, p.sliceMs))
    const l = lat(r)
    fixed.push({
      rate,
      p50: percentile(l, 50),
      p99: percentile(l, 99),
      cpuUs: (cpu * 1000) / okOf(r).length,
      failed: failedOf(r),
    })
  }
  await closed(sse, p.streamConcurrency, p.warmupMs)
  const [streams, streamCpu] = await withCpu(t, () => closed(sse, p.streamConcurrency, p.sliceMs))
  await open(sse, p.streamRate, p.warmupMs)
  const paced = await open(sse, p.streamRate, p.sliceMs)
  const okStreams = okOf(paced)
  const ttfc = sorted(okStreams.flatMap((x) => (x.eventsMs?.[0] === undefined ? [] : [x.eventsMs[0]])))
  const chunks = sorted(okStreams.flatMap((x) => x.stampDelaysMs ?? []))
  const okSat = okOf(sat).length
  const okSse = okOf(streams).length
  return {
    satRps: (okSat * 1000) / sat.elapsedMs,
    satP50: percentile(satLat, 50),
    satP99: percentile(satLat, 99),
    cpuUsPerReq: (satCpu * 1000) / okSat,
    fixed,
    streamsPerS: (okSse * 1000) / streams.elapsedMs,
    cpuUsPerStream: (streamCpu * 1000) / okSse,
    ttfcP50: percentile(ttfc, 50),
    ttfcP99: percentile(ttfc, 99),
    chunkP50: percentile(chunks, 50),
    chunkP99: percentile(chunks, 99),
    failed: failedOf(sat) + failedOf(streams) + failedOf(paced) + fixed.reduce((a, f) => a + f.failed, 0),
  }
}

/** Once per target before the rounds: small requests, then streams, discarded (JIT warm-up). */
export async function warmTarget(client: Pool, t: Target, p: PeersProfile): Promise<void> {
  await closedLoop({
    client,
    request: spec(t, chatBody(1024, false, p.chunks), false),
    concurrency: p.concurrency,
    durationMs: p.initialWarmupMs,
  })
  await closedLoop({
    client,
    request: spec(t, chatBody(1024, true, p.chunks), true),
    concurrency: p.streamConcurrency,
    durationMs: p.initialWarmupMs / 2,
  })
}
