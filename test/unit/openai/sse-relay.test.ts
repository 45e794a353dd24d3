import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src/clock.js'
import { Exchange } from '../../../src/exchange.js'
import { SseRelay } from '../../../src/openai/sse-relay.js'
import { Ticket } from '../../../src/ticket.js'
import { chunkEvent, usageEvent } from '../../helpers/upstream.js'

function relay(strip: boolean) {
  const clock = new ManualClock(1000)
  const ticket = new Ticket('t', 'POST', '/v1/chat/completions', 1000)
  return { clock, ticket, r: new SseRelay(new Exchange(ticket, clock, []), strip) }
}

const STREAM = [
  'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n',
  chunkEvent('Hello'),
  chunkEvent(' wörld'),
  chunkEvent('!', 'stop'),
  usageEvent(7, 3),
  'data: [DONE]\n\n',
]

describe('SseRelay', () => {
  it('passes bytes through unchanged and records first token, chunks, gaps, finish reason, usage', () => {
    const { r, ticket, clock } = relay(false)
    const out: Buffer[] = []
    for (const e of STREAM) {
      clock.advance(10)
      out.push(r.push(Buffer.from(e)))
    }
    out.push(r.flush())
    expect(Buffer.concat(out).toString()).toBe(STREAM.join(''))
    expect(ticket.firstTokenAt).toBe(1020) // the role-only chunk is not a token
    expect(ticket.contentChunks).toBe(3)
    expect(ticket.itlMs).toEqual([10, 10])
    expect(ticket.finishReason).toBe('stop')
    expect(ticket.usage).toEqual({ promptTokens: 7, completionTokens: 3 })
  })

  it('drops the usage-only chunk when the client did not ask for it', () => {
    const { r, ticket } = relay(true)
    const out = STREAM.map((e) => r.push(Buffer.from(e)))
    expect(Buffer.concat(out).toString()).toBe(STREAM.filter((_, i) => i !== 4).join(''))
    expect(ticket.usage).toEqual({ promptTokens: 7, completionTokens: 3 })
  })

  it('holds only a partial event, whatever the split points (multi-byte characters included)', () => {
    const whole = Buffer.from(STREAM.join(''))
    for (const size of [1, 2, 3, 7, 50]) {
      const { r, ticket } = relay(true)
      const out: Buffer[] = []
      for (let i = 0; i < whole.length; i += size) {
        const piece = r.push(whole.subarray(i, i + size))
        // nothing forwarded ever ends inside an event
        if (piece.length > 0) expect(piece.toString().endsWith('\n\n')).toBe(true)
        out.push(piece)
      }
      out.push(r.flush())
      expect(Buffer.concat(out).toString()).toBe(STREAM.filter((_, i) => i !== 4).join(''))
      expect(ticket.contentChunks).toBe(3)
    }
  })

  it('understands CRLF line endings, completions `text`, and passes non-JSON events unread', () => {
    const { r, ticket } = relay(false)
    const crlf = 'data: {"choices":[{"index":0,"text":"hi","finish_reason":"length"}]}\r\n\r\n'
    const odd = ': keep-alive comment\n\ndata: not json\n\n'
    expect(r.push(Buffer.from(crlf + odd)).toString()).toBe(crlf + odd)
    expect(ticket.contentChunks).toBe(1)
    expect(ticket.finishReason).toBe('length')
  })

  it('counts reasoning and tool-call deltas as content', () => {
    const { r, ticket } = relay(false)
    r.push(Buffer.from('data: {"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}\n\n'))
    r.push(Buffer.from('data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]}\n\n'))
    expect(ticket.contentChunks).toBe(2)
  })
})
