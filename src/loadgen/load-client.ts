/**
 * Load generators on undici (the overhead bench in bench/ drives its targets with them).
 *
 * - closedLoop: `concurrency` workers, each sending its next request when the last one
 *   ended, for a fixed number of requests or a fixed time.
 * - openLoop: requests started on a fixed schedule (`ratePerS`) whatever the answers do,
 *   so a slow server cannot slow the offered load down (no coordinated omission). Latency
 *   counts from the request's dispatch, which keeps to the schedule within the timer's
 *   granularity (`lagMs` reports how late each dispatch was).
 * - Streams (`stream: true` on either): each SSE event's arrival time is recorded, and
 *   when the event carries a send-time stamp (`"t_ns": <CLOCK_MONOTONIC ns>`, as
 *   bench/trivial-upstream.ts writes) the upstream-to-client delay of that event too.
 *
 * Every loop takes a Dispatcher (make one with `connect`) so a warm-up and the measured
 * run share connections.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { type Dispatcher, Pool } from 'undici'
import { SseSplitter } from './sse-split.js'

export interface RequestSpec {
  readonly method?: 'GET' | 'POST'
  readonly path: string
  readonly body?: string
  readonly headers?: Record<string, string>
  /** Read the answer as SSE and time each event. */
  readonly stream?: boolean
}

export interface RequestRecord {
  /** performance.now() at dispatch. */
  readonly startMs: number
  /** Dispatch to the end of the body, ms. */
  readonly latencyMs: number
  /** HTTP status, 0 when the request failed before one came. */
  readonly status: number
  readonly error?: string
  /** Streams: arrival of each data event (not `[DONE]`), ms after dispatch. */
  readonly eventsMs?: number[]
  /** Streams: upstream-stamp-to-arrival delay of each stamped event, ms. */
  readonly stampDelaysMs?: number[]
}

export interface LoadResult {
  readonly records: RequestRecord[]
  /** Wall time of the run, from the first dispatch to the last answer, ms. */
  readonly elapsedMs: number
  /** Open loop: how late each dispatch was against its schedule, ms. */
  readonly lagMs?: number[]
}

const STAMP = /"t_ns":(\d+)/

/** One keep-alive connection pool to an origin for a load run. */
export function connect(origin: string, connections: number): Pool {
  return new Pool(origin, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  })
}

/** The arrival time of each data event, and the delay of each upstream stamp. */
async function readSse(body: Dispatcher.ResponseData['body'], startNs: bigint) {
  const eventsMs: number[] = []
  const stampDelaysMs: number[] = []
  const sse = new SseSplitter()
  let nowNs = startNs
  const onEvent = (event: string) => {
    if (!event.startsWith('data:') || event.startsWith('data: [DONE]')) return
    eventsMs.push(Number(nowNs - startNs) / 1e6)
    const m = STAMP.exec(event)
    if (m?.[1] !== undefined) stampDelaysMs.push(Number(nowNs - BigInt(m[1])) / 1e6)
  }
  body.setEncoding('utf8')
  for await (const piece of body as AsyncIterable<string>) {
    nowNs = process.hrtime.bigint()
    sse.push(piece, onEvent)
  }
  return { eventsMs, stampDelaysMs }
}

/** Sends one request and reads its answer in full. Never throws. */
export async function send(client: Dispatcher, spec: RequestSpec): Promise<RequestRecord> {
  const startMs = performance.now()
  const startNs = process.hrtime.bigint()
  try {
    const res = await client.request({
      method: spec.method ?? 'POST',
      path: spec.path,
      headers: spec.headers ?? { 'content-type': 'application/json' },
      body: spec.body ?? null,
    })
    if (spec.stream && res.statusCode === 200) {
      const ev = await readSse(res.body, startNs)
      return { startMs, latencyMs: performance.now() - startMs, status: res.statusCode, ...ev }
    }
    await res.body.arrayBuffer()
    return { startMs, latencyMs: performance.now() - startMs, status: res.statusCode }
  } catch (err) {
    return { startMs, latencyMs: performance.now() - startMs, status: 0, error: (err as Error).name }
  }
}

export interface ClosedLoopOptions {
  readonly client: Dispatcher
  readonly request: RequestSpec
  readonly concurrency: number
  /** Stop after this many requests in total... */
  readonly requests?: number
  /** ...or after this long (ms), whichever comes first. At least one must be set. */
  readonly durationMs?: number
}

export async function closedLoop(o: ClosedLoopOptions): Promise<LoadResult> {
  if (o.requests === undefined && o.durationMs === undefined)
    throw new Error('closedLoop: set requests or durationMs')
  const records: RequestRecord[] = []
  const t0 = performance.now()
  const deadline = o.durationMs === undefined ? Number.POSITIVE_INFINITY : t0 + o.durationMs
  const limit = o.requests ?? Number.POSITIVE_INFINITY
  let issued = 0
  const worker = async () => {
    while (issued < limit && performance.now() < deadline) {
      issued++
      records.push(await send(o.client, o.request))
    }
  }
  await Promise.all(Array.from({ length: o.concurrency }, worker))
  return { records, elapsedMs: performance.now() - t0 }
}

export interface OpenLoopOptions {
  readonly client: Dispatcher
  readonly request: RequestSpec
  readonly ratePerS: number
  readonly durationMs: number
}

export async function openLoop(o: OpenLoopOptions): Promise<LoadResult> {
  const total = Math.round((o.ratePerS * o.durationMs) / 1000)
  const gapMs = 1000 / o.ratePerS
  const records: RequestRecord[] = []
  const lagMs: number[] = []
  const inflight: Promise<void>[] = []
  const t0 = performance.now()
  let i = 0
  while (i < total) {
    const now = performance.now()
    while (i < total && t0 + i * gapMs <= now) {
      lagMs.push(now - (t0 + i * gapMs))
      inflight.push(send(o.client, o.request).then((r) => void records.push(r)))
      i++
    }
    if (i < total) await sleep(Math.max(0, t0 + i * gapMs - performance.now()))
  }
  await Promise.all(inflight)
  return { records, elapsedMs: performance.now() - t0, lagMs }
}

/** Records that ended with a 2xx. */
export const succeeded = (r: RequestRecord) => r.status >= 200 && r.status < 300

/** `{ "200": 9990, "503": 10, "error:SocketError": 2 }` */
export function outcomes(records: readonly RequestRecord[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const r of records) {
    const k = r.status === 0 ? `error:${r.error ?? 'unknown'}` : String(r.status)
    out[k] = (out[k] ?? 0) + 1
  }
  return out
}
