/**
 * Observes a non-streamed JSON response on its way to the client: it keeps a copy (up to a
 * cap) while the bytes are relayed, and reads `usage` and the finish reason at the end.
 */
import type { Ticket } from '../ticket.js'

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

  finish(ticket: Ticket): void {
    if (this.parts.length === 0) return
    let body: unknown
    try {
      body = JSON.parse(Buffer.concat(this.parts, this.bytes).toString('utf8'))
    } catch {
      return
    }
    this.parts = []
    if (typeof body !== 'object' || body === null) return
    const { usage, choices } = body as { usage?: unknown; choices?: unknown }
    if (typeof usage === 'object' && usage !== null) {
      const u = usage as Record<string, unknown>
      if (typeof u.prompt_tokens === 'number') {
        ticket.usage = {
          promptTokens: u.prompt_tokens,
          completionTokens: typeof u.completion_tokens === 'number' ? u.completion_tokens : 0,
        }
      }
    }
    if (Array.isArray(choices) && typeof choices[0] === 'object' && choices[0] !== null) {
      const fr = (choices[0] as Record<string, unknown>).finish_reason
      if (typeof fr === 'string') ticket.finishReason = fr
    }
  }
}
