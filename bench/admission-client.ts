/**
 * One streamed chat completion as the admission bench sends it, timed on the client: status,
 * the gateway's headers, the arrival of every content token, and the usage chunk.
 *
 * TTFT counts from the moment the request is dispatched to the first SSE event that carries a
 * choice (the simulator, like vLLM, sends the role and the first token together). The request
 * never throws: a network error is status 0, a cut-off (the run's abort signal) sets `cut`.
 */
import { subscribe } from 'node:diagnostics_channel'
import type { Socket } from 'node:net'
import type { Dispatcher } from 'undici'
import { SseSplitter } from '../src/loadgen/sse-split.js'
import { type Arrival, chatMessages } from './admission-workload.js'

export interface Outcome {
  readonly arrival: Arrival
  /** When it was due and when it was sent, wall ms from the run's start. */
  readonly dueMs: number
  readonly sentMs: number
  status: number
  error?: string
  headersMs?: number
  /** Wall ms from the run's start of each content token's arrival. */
  readonly tokenMs: number[]
  usageTokens?: number
  /** Ended by the run's cut-off before the stream finished. */
  cut: boolean
  /** The stream ended normally ([DONE] or the end of the body). */
  done: boolean
  predictedTtftMs?: number
  /** A refusal's predicted TTFT, from its message (`predicted N ms`): the raw outcomes tell why. */
  refusedPredictedMs?: number
  queueMs?: number
  degraded?: string
  rejectReason?: string
  retryAfterS?: number
  /** The refusal's `retry-after-ms` (the gateway's; the `openai` client honours it before `retry-after`). */
  retryAfterMs?: number
  /** When undici wrote the request to a socket, wall ms from the run's start (after any connect). */
  writtenMs?: number
  /** It opened a new connection (none of the pool's was free). */
  newConnection?: boolean
  /** A refusal's `server-timing: gateway;dur=`: how long the gateway held it, wall ms. */
  gatewayMs?: number
}

/** A refusal: 429 or 503 (queue_timeout and a proxy's own 503 included). */
export const isRefusal = (o: Outcome) => o.status === 503 || o.status === 429

/** Admitted and not failed: 200, or no status yet when the run was cut off (queued in the gateway or at the server). */
export const isAdmitted = (o: Outcome) =>
  !isRefusal(o) && o.error === undefined && (o.status === 200 || o.status === 0)

/** It arrived (by its schedule, model ms) within `w`'s measured window: it is judged there. */
export const arrivedIn = (o: Outcome, w: { readonly fromMs: number; readonly toMs: number }) =>
  o.arrival.atMs >= w.fromMs && o.arrival.atMs < w.toMs

/**
 * When each request goes on the wire: undici publishes the moment it writes a request's headers
 * (after connecting, if it had to). A refusal's wait at the client splits into the client's own
 * (dispatch, connect) and the wait from that write on. Requests are known by an `x-bench-id`.
 */
const onTheWire = new Map<string, { o: Outcome; t0: number }>()
const usedSockets = new WeakSet<Socket>()
const BENCH_ID = /\r\nx-bench-id: (\S+)\r\n/
let nextId = 0
subscribe('undici:client:sendHeaders', (message) => {
  const m = message as { headers: string; socket: Socket }
  const id = BENCH_ID.exec(`\r\n${m.headers}`)?.[1]
  const sent = id === undefined ? undefined : onTheWire.get(id)
  if (sent === undefined) return
  onTheWire.delete(id as string)
  sent.o.writtenMs = performance.now() - sent.t0
  sent.o.newConnection = !usedSockets.has(m.socket)
  usedSockets.add(m.socket)
})

const SERVER_TIMING = /(?:^|,)\s*gateway;dur=([\d.]+)/

export interface SendContext {
  readonly client: Dispatcher
  readonly model: string
  /** Unique per run, so no prompt shares a prefix with another run's. */
  readonly tag: string
  readonly t0: number
  readonly signal: AbortSignal
}

function header(h: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = h[name]
  return Array.isArray(v) ? v[0] : v
}

function num(v: string | undefined): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  return Number.isFinite(n) ? n : undefined
}

export function requestBody(a: Arrival, model: string, tag: string): string {
  return JSON.stringify({
    model,
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: a.outputTokens,
    ignore_eos: true,
    messages: chatMessages(tag, a),
  })
}

const USAGE = /"completion_tokens":(\d+)/
const PREDICTED = /predicted (\d+) ms/

/**
 * Sends one request and reads its response through undici's dispatch handler: callbacks on the
 * socket's reads, no body stream, no async iterator, no promise per chunk. The load generator
 * shares the machine's 2 cores with what it measures; every chunk it spends less on is a chunk
 * sooner that a response (a refusal's headers among them) is read and timed.
 */
export function sendOne(ctx: SendContext, a: Arrival, dueMs: number): Promise<Outcome> {
  const body = requestBody(a, ctx.model, ctx.tag)
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (a.cls === 'batch') headers['x-priority'] = 'batch'
  if (a.allowDemotion === true) headers['x-gateway-allow-demotion'] = 'true'
  const id = String(++nextId)
  headers['x-bench-id'] = id
  const sentMs = performance.now() - ctx.t0
  const o: Outcome = { arrival: a, dueMs, sentMs, status: 0, tokenMs: [], cut: false, done: false }
  onTheWire.set(id, { o, t0: ctx.t0 })
  return new Promise<Outcome>((resolve) => {
    const handler = new ResponseReader(o, ctx, () => {
      onTheWire.delete(id)
      resolve(o)
    })
    ctx.client.dispatch({ method: 'POST', path: '/v1/chat/completions', headers, body }, handler)
  })
}

/** One response as sendOne reads it: headers, then SSE events (a 200) or the refusal's text. */
class ResponseReader implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined
  private readonly sse = new SseSplitter()
  private refusal = ''
  private now = 0
  private ended = false

  constructor(
    private readonly o: Outcome,
    private readonly ctx: SendContext,
    private readonly end: () => void,
  ) {
    // already cut off, or cut off while queued in the pool: onRequestStart aborts it
    ctx.signal.addEventListener('abort', this.onAbort, { once: true })
  }

  private readonly onAbort = (): void => {
    this.controller?.abort(new Error('cut off'))
  }

  private readonly onEvent = (event: string): void => {
    if (!event.startsWith('data:')) return
    if (event.includes('"choices":[{')) this.o.tokenMs.push(this.now)
    else if (event.includes('"usage"')) {
      const m = USAGE.exec(event)
      if (m?.[1] !== undefined) this.o.usageTokens = Number(m[1])
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    if (this.ctx.signal.aborted) controller.abort(new Error('cut off'))
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    h: Record<string, string | string[] | undefined>,
  ): void {
    const o = this.o
    o.status = statusCode
    o.headersMs = performance.now() - this.ctx.t0
    const pred = num(header(h, 'x-gateway-predicted-ttft-ms'))
    if (pred !== undefined) o.predictedTtftMs = pred
    const q = num(header(h, 'x-gateway-queue-ms'))
    if (q !== undefined) o.queueMs = q
    const deg = header(h, 'x-gateway-degraded')
    if (deg !== undefined) o.degraded = deg
    const reason = header(h, 'x-gateway-reject-reason')
    if (reason !== undefined) o.rejectReason = reason
    const ra = num(header(h, 'retry-after'))
    if (ra !== undefined) o.retryAfterS = ra
    const raMs = num(header(h, 'retry-after-ms'))
    if (raMs !== undefined) o.retryAfterMs = raMs
    if (statusCode !== 200) {
      const timing = SERVER_TIMING.exec(header(h, 'server-timing') ?? '')?.[1]
      if (timing !== undefined) o.gatewayMs = Number(timing)
    }
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.o.status !== 200) {
      this.refusal += chunk.toString('utf8')
      return
    }
    this.now = performance.now() - this.ctx.t0
    // latin1: one byte per character, no decoding; the markers looked for are ASCII and an
    // event's blank line cannot fall inside a UTF-8 sequence
    this.sse.push(chunk.toString('latin1'), this.onEvent)
  }

  onResponseEnd(): void {
    if (this.o.status !== 200) {
      const m = PREDICTED.exec(this.refusal)
      if (m?.[1] !== undefined) this.o.refusedPredictedMs = Number(m[1])
    }
    this.o.done = true
    this.finish()
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.ctx.signal.aborted) this.o.cut = true
    else this.o.error = err.name
    this.finish()
  }

  private finish(): void {
    if (this.ended) return
    this.ended = true
    this.ctx.signal.removeEventListener('abort', this.onAbort)
    this.end()
  }
}

/** One request, flat, wall ms (for --raw). */
export function outcomeLine(path: string, segment: string, o: Outcome) {
  const first = o.tokenMs[0]
  const last = o.tokenMs[o.tokenMs.length - 1]
  return {
    path,
    segment,
    cls: o.arrival.cls,
    seq: o.arrival.seq,
    promptTokens: o.arrival.promptTokens,
    outputTokens: o.arrival.outputTokens,
    sentMs: Math.round(o.sentMs),
    status: o.status,
    /** Send, the write to a socket, and response headers, wall ms after the send. */
    writtenMs: after(o, o.writtenMs),
    headersMs: after(o, o.headersMs),
    newConnection: o.newConnection,
    gatewayMs: o.gatewayMs,
    error: o.error,
    reason: o.rejectReason,
    retryAfterMs: o.retryAfterMs,
    predictedTtftMs: o.predictedTtftMs,
    refusedPredictedMs: o.refusedPredictedMs,
    queueMs: o.queueMs,
    ttftMs: first === undefined ? undefined : Math.round(first - o.sentMs),
    tokens: o.tokenMs.length,
    tpotMs:
      first !== undefined && last !== undefined && o.tokenMs.length > 1
        ? (last - first) / (o.tokenMs.length - 1)
        : undefined,
    degraded: o.degraded,
    cut: o.cut,
  }
}

function after(o: Outcome, ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round((ms - o.sentMs) * 100) / 100
}
