/**
 * Observes a non-streamed JSON response on its way to the client: it keeps a copy (up to a
 * cap) while the bytes are relayed, and reads `usage` and the finish reason at the end.
 */
import { isRecord } from '../is-record.js'
import type { Ticket } from '../ticket.js'
import { responsesOutcome } from './sse-relay.js'

/** Responses larger than this are relayed without being read (e.g. big embedding batches). */
const MAX_OBSERVED_BYTES = 1024 * 1024

export class JsonObserver {
  private parts: Buffer[] = []
  private bytes = 0

  push(chunk: Buffer): void {
    if (this.bytes > MAX_OBSERVED_BYTES) return
    this.bytes += chunk.length
    if (this.bytes > MAX_OBSERVED_BYTES) this.parts = []
    else this.parts.push(chunk)
  }

  finish(ticket: Pick<Ticket, 'usage' | 'finishReason'>): void {
    if (this.parts.length === 0) return
    let body: unknown
    try {
      body = JSON.parse(Buffer.concat(this.parts, this.bytes).toString('utf8'))
    } catch {
      return
    }
    this.parts = []
    if (!isRecord(body)) return
    if (body.object === 'response') {
      // Responses API: usage in input/output tokens, the end in `status`
      const { usage, finishReason } = responsesOutcome(body)
      if (usage !== undefined) ticket.usage = usage
      if (finishReason !== undefined) ticket.finishReason = finishReason
      return
    }
    const { usage, choices } = body
    if (isRecord(usage) && typeof usage.prompt_tokens === 'number') {
      ticket.usage = {
        promptTokens: usage.prompt_tokens,
        completionTokens: typeof usage.completion_tokens === 'number' ? usage.completion_tokens : 0,
      }
    }
    const first: unknown = Array.isArray(choices) ? choices[0] : undefined
    if (isRecord(first) && typeof first.finish_reason === 'string') ticket.finishReason = first.finish_reason
  }
}
