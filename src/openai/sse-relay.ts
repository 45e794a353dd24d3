/**
 * Observes an OpenAI-style Server-Sent-Events stream on its way to the client.
 *
 * Bytes are forwarded as they came (no JSON re-encoding): each upstream chunk is passed
 * on up to its last complete event; only a trailing partial event is held until its end
 * arrives. Each complete event is read (JSON.parse of its data) to record the first
 * content token and each chunk after it (told to the request's Exchange, which times them
 * and tells its observers), the finish reason and the usage. When the gateway added `stream_options.include_usage` itself, the usage-only
 * chunk (`"choices": []`) is dropped again so the client sees exactly what it asked for.
 */
import type { Exchange } from '../exchange.js'
import { isRecord } from '../is-record.js'
import type { Usage } from '../ticket.js'

const LF = 0x0a
const CR = 0x0d
const DATA = Buffer.from('data:')
const EMPTY = Buffer.alloc(0)

type Json = Record<string, unknown>

/** Index just past the blank line that ends the last complete event in buf, or 0. */
function lastEventEnd(buf: Buffer): number {
  for (let i = buf.length - 1; i > 0; i--) {
    if (buf[i] !== LF) continue
    const prev = buf[i - 1]
    if (prev === LF) return i + 1
    if (prev === CR && i >= 2 && buf[i - 2] === LF) return i + 1
    if (prev === CR && i >= 3 && buf[i - 2] === CR && buf[i - 3] === LF) return i + 1
  }
  return 0
}

export class SseRelay {
  private pending: Buffer = EMPTY
  private readonly exchange: Exchange
  private readonly stripUsage: boolean

  constructor(exchange: Exchange, stripUsage: boolean) {
    this.exchange = exchange
    this.stripUsage = stripUsage
  }

  /** Takes an upstream chunk; returns what to send to the client now (maybe empty). */
  push(chunk: Buffer): Buffer {
    const buf = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    const end = lastEventEnd(buf)
    if (end === 0) {
      this.pending = buf
      return EMPTY
    }
    this.pending = end === buf.length ? EMPTY : buf.subarray(end)
    const complete = end === buf.length ? buf : buf.subarray(0, end)
    return this.observe(complete)
  }

  /** At the upstream's end: whatever partial event is left, passed on as it is. */
  flush(): Buffer {
    const rest = this.pending
    this.pending = EMPTY
    return rest
  }

  /** Drops a held partial event (the stream failed; it can never complete). */
  discard(): void {
    this.pending = EMPTY
  }

  /** Reads every event in `buf` (complete events only); returns the bytes to forward. */
  private observe(buf: Buffer): Buffer {
    let dropFrom = -1
    let dropTo = -1
    let start = 0
    while (start < buf.length) {
      let end = buf.indexOf(LF, start)
      if (end === -1) end = buf.length
      // one line: `data: {...}` (other fields and comments are passed on unread)
      if (
        buf.length - start > DATA.length &&
        buf.compare(DATA, 0, DATA.length, start, start + DATA.length) === 0
      ) {
        const lineEnd = end > start && buf[end - 1] === CR ? end - 1 : end
        if (this.onData(buf, start + DATA.length, lineEnd) && this.stripUsage) {
          dropFrom = start
          // the event's own blank line goes with it
          let next = end + 1
          while (next < buf.length && (buf[next] === LF || buf[next] === CR)) next++
          dropTo = next
        }
      }
      start = end + 1
    }
    if (dropFrom === -1) return buf
    return Buffer.concat([buf.subarray(0, dropFrom), buf.subarray(dropTo)])
  }

  private onResponsesEvent(type: string, event: Json): void {
    if (RESPONSES_CONTENT.test(type)) {
      const delta = event.delta
      if (typeof delta === 'string' && delta.length > 0) this.exchange.contentToken()
      return
    }
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') {
      const { usage, finishReason } = responsesOutcome(event.response)
      const t = this.exchange.ticket
      if (usage !== undefined) t.usage = usage
      if (finishReason !== undefined) t.finishReason = finishReason
    }
  }

  /** Records one `data:` payload. Returns true when it is a usage-only chunk. */
  private onData(buf: Buffer, from: number, to: number): boolean {
    if (buf[from] === 0x20) from++
    if (to - from === 6 && buf.toString('latin1', from, to) === '[DONE]') return false
    let event: unknown
    try {
      event = JSON.parse(buf.toString('utf8', from, to))
    } catch {
      return false // not JSON: relayed, not counted
    }
    if (!isRecord(event)) return false
    if (typeof event.type === 'string') {
      this.onResponsesEvent(event.type, event)
      return false
    }
    const t = this.exchange.ticket
    const usage = event.usage
    if (isRecord(usage) && typeof usage.prompt_tokens === 'number') {
      t.usage = {
        promptTokens: usage.prompt_tokens,
        completionTokens: typeof usage.completion_tokens === 'number' ? usage.completion_tokens : 0,
      }
    }
    const choices = event.choices
    if (!Array.isArray(choices)) return false
    if (choices.length === 0) return t.usage !== undefined && isRecord(usage)
    const choice: unknown = choices[0]
    if (!isRecord(choice)) return false
    if (typeof choice.finish_reason === 'string') t.finishReason = choice.finish_reason
    if (hasContent(choice)) this.exchange.contentToken()
    return false
  }
}

/**
 * Responses API stream events: a `.delta` of output text, reasoning or tool-call arguments
 * is a token; the final `response.completed` / `response.incomplete` carries the usage and
 * how it ended. Never dropped: the API always sends its usage.
 */
const RESPONSES_CONTENT =
  /^response\.(output_text|refusal|reasoning_text|reasoning_summary_text|function_call_arguments)\.delta$/

export function responsesOutcome(response: unknown): { usage?: Usage; finishReason?: string } {
  if (!isRecord(response)) return {}
  const out: { usage?: Usage; finishReason?: string } = {}
  const u = response.usage
  if (isRecord(u) && typeof u.input_tokens === 'number') {
    out.usage = {
      promptTokens: u.input_tokens,
      completionTokens: typeof u.output_tokens === 'number' ? u.output_tokens : 0,
    }
  }
  if (response.status === 'completed') out.finishReason = 'stop'
  else if (response.status === 'incomplete') {
    const d = response.incomplete_details
    const reason = isRecord(d) && typeof d.reason === 'string' ? d.reason : 'incomplete'
    out.finishReason = reason === 'max_output_tokens' ? 'length' : reason
  }
  return out
}

/** A chunk carries content when it has text, reasoning or a tool call for the client. */
function hasContent(choice: Json): boolean {
  if (typeof choice.text === 'string') return choice.text.length > 0
  const delta = choice.delta
  if (!isRecord(delta)) return false
  return (
    (typeof delta.content === 'string' && delta.content.length > 0) ||
    (typeof delta.reasoning_content === 'string' && delta.reasoning_content.length > 0) ||
    (typeof delta.reasoning === 'string' && delta.reasoning.length > 0) ||
    (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0)
  )
}

/** The event that ends a stream that failed midway (documented in docs/errors.md). */
export function streamErrorEvent(body: object): Buffer {
  return Buffer.from(`data: ${JSON.stringify(body)}\n\n`)
}
