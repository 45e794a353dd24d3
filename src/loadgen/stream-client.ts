/**
 * One streamed completion, timed as `vllm bench serve` times it (the times are ms from
 * dispatch, the moment before the request is handed to undici):
 *
 * - TTFT: the first chunk with content (a role-only or empty first delta does not count);
 * - ITL: the gap before each later chunk with content;
 * - E2E: the last chunk with content;
 * - TPOT: (E2E - TTFT) / (output tokens - 1), output tokens from the streamed `usage`
 *   (asked for with `stream_options.include_usage`), else the chunks with content counted.
 *
 * A chunk is stamped when the piece of the body holding it arrives (events that came in one
 * piece share its stamp). It records the status, `retry-after`, the gateway's headers and,
 * on a refusal, the error code of the body. Never throws.
 */
import type { Dispatcher } from 'undici'
import { isRecord } from '../is-record.js'
import { SseSplitter } from './sse-split.js'

export interface StreamRequest {
  readonly path: string
  readonly body: string
  readonly headers: Record<string, string>
  readonly timeoutMs: number
  /** Keep the streamed text (a conversation sends it back as the assistant's turn). */
  readonly keepText?: boolean
  /** Aborts the request (the run's drain timeout). */
  readonly signal?: AbortSignal
}

export interface StreamTiming {
  /** HTTP status; 0 when none came. */
  status: number
  /** Why it failed: a connection error's name, `timeout`, `aborted`, `stream:<code>`, `incomplete`. */
  error?: string
  /** The error body's `error.code` (or `type`) of a refusal. */
  errorCode?: string
  /** Headers worth keeping: retry-after*, x-gateway-*, x-should-retry, x-ratelimit-* are not kept. */
  headers: Record<string, string>
  /** Dispatch to the end of the response, ms (for a refusal: how long it took). */
  latencyMs: number
  ttftMs?: number
  e2eMs?: number
  tpotMs?: number
  itlMs: number[]
  /** Chunks with content. */
  chunks: number
  /** From the streamed usage; undefined when the server sent none. */
  outputTokens?: number
  promptTokens?: number
  text?: string
}

const KEPT_HEADER = /^(x-gateway-|retry-after|x-should-retry$)/

/** The content of one chat or completions chunk, '' when it carries none. */
function contentOf(choice: unknown): string {
  if (!isRecord(choice)) return ''
  if (typeof choice.text === 'string') return choice.text
  const delta = choice.delta
  if (!isRecord(delta)) return ''
  for (const k of ['content', 'reasoning_content', 'reasoning'] as const) {
    const v = delta[k]
    if (typeof v === 'string' && v !== '') return v
  }
  return ''
}

function errorCode(text: string): string | undefined {
  try {
    const body: unknown = JSON.parse(text)
    if (isRecord(body) && isRecord(body.error)) {
      const { code, type } = body.error
      if (typeof code === 'string' && code !== '') return code
      if (typeof type === 'string' && type !== '') return type
    }
  } catch {}
  return undefined
}

function keptHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined || !KEPT_HEADER.test(k)) continue
    out[k] = Array.isArray(v) ? v.join(', ') : v
  }
  return out
}

/** Reads the SSE body, stamping each chunk with content at the arrival of its piece. */
async function readStream(
  body: Dispatcher.ResponseData['body'],
  start: number,
  t: StreamTiming,
  keepText: boolean,
): Promise<void> {
  const sse = new SseSplitter()
  let now = start
  let last = 0
  let done = false
  const pieces: string[] = []
  const onEvent = (event: string) => {
    if (!event.startsWith('data:')) return
    const data = event.slice(5).trim()
    if (data === '[DONE]') {
      done = true
      return
    }
    let chunk: unknown
    try {
      chunk = JSON.parse(data)
    } catch {
      return
    }
    if (!isRecord(chunk)) return
    if (isRecord(chunk.error)) {
      t.error = `stream:${String(chunk.error.code ?? chunk.error.type ?? 'error')}`
      return
    }
    const usage = chunk.usage
    if (isRecord(usage) && typeof usage.completion_tokens === 'number') {
      t.outputTokens = usage.completion_tokens
      if (typeof usage.prompt_tokens === 'number') t.promptTokens = usage.prompt_tokens
    }
    const content = Array.isArray(chunk.choices) ? contentOf(chunk.choices[0]) : ''
    if (content === '') return
    const at = now - start
    if (t.chunks === 0) t.ttftMs = at
    else t.itlMs.push(at - last)
    last = at
    t.chunks++
    if (keepText) pieces.push(content)
  }
  body.setEncoding('utf8')
  for await (const piece of body as AsyncIterable<string>) {
    now = performance.now()
    sse.push(piece, onEvent)
  }
  if (t.chunks > 0) t.e2eMs = last
  if (keepText) t.text = pieces.join('')
  if (t.error === undefined && !done) t.error = 'incomplete'
}

function failure(err: unknown, signal: AbortSignal | undefined, timedOut: boolean): string {
  if (timedOut) return 'timeout'
  if (signal?.aborted) return 'aborted'
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException }
  return e.cause?.code ?? e.code ?? e.name ?? 'error'
}

export async function streamRequest(client: Dispatcher, req: StreamRequest): Promise<StreamTiming> {
  const t: StreamTiming = { status: 0, headers: {}, latencyMs: 0, itlMs: [], chunks: 0 }
  const timeout = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    timeout.abort()
  }, req.timeoutMs)
  const signal = req.signal === undefined ? timeout.signal : AbortSignal.any([timeout.signal, req.signal])
  const start = performance.now()
  try {
    const res = await client.request({
      method: 'POST',
      path: req.path,
      headers: req.headers,
      body: req.body,
      signal,
    })
    t.status = res.statusCode
    t.headers = keptHeaders(res.headers)
    if (res.statusCode === 200) await readStream(res.body, start, t, req.keepText === true)
    else {
      const code = errorCode(await res.body.text())
      if (code !== undefined) t.errorCode = code
    }
  } catch (err) {
    t.error = failure(err, req.signal, timedOut)
  } finally {
    clearTimeout(timer)
  }
  t.latencyMs = performance.now() - start
  const tokens = t.outputTokens ?? t.chunks
  if (t.ttftMs !== undefined && t.e2eMs !== undefined && tokens > 1)
    t.tpotMs = (t.e2eMs - t.ttftMs) / (tokens - 1)
  return t
}
