/** The per-request log line carries the verdict telemetry judged (judged once). */
import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../../../src/logger.js'
import { Accounting, SHED_LOG_MS } from '../../../src/proxy/account.js'
import type { Ticket } from '../../../src/ticket.js'
import { setup, ticket } from './fixtures.js'

function accounting(recorder: { record(t: Ticket): unknown }) {
  const lines: Record<string, unknown>[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l !== '') lines.push(JSON.parse(l))
      done()
    },
  })
  const acc = new Accounting(recorder, createLogger('info', sink))
  const requestLines = () => lines.filter((l) => l.msg === 'request')
  return { acc, requestLines, lines }
}

describe('the request log line', () => {
  it('says good, which objectives a request missed, or the kind of the rest', async () => {
    const { telemetry } = setup()
    const { acc, requestLines } = accounting(telemetry)
    const usage = { promptTokens: 1, completionTokens: 100 }
    acc.ended(ticket(0, { ttft: 100, e2e: 300, chunks: 11 }))
    acc.ended(ticket(0, { ttft: 900, e2e: 9_000, chunks: 11 }))
    acc.ended(ticket(0, { stream: false, e2e: 2_000, usage }))
    acc.ended(ticket(0, { stream: false, e2e: 6_000, usage }))
    acc.ended(ticket(0, { outcome: 'upstream_error', status: 400, e2e: 10 }))
    acc.ended(ticket(0, { outcome: 'upstream_error', status: 429, e2e: 10 }))
    acc.ended(ticket(0, { outcome: 'rejected', errorCode: 'queue_full' }))
    acc.ended(ticket(0, { outcome: 'cancelled', status: 200, ttft: 100, chunks: 2 }))
    acc.ended(ticket(0, { outcome: 'invalid', errorCode: 'GW_ERR_INVALID_JSON' }))
    await new Promise((r) => setImmediate(r))
    const got = requestLines().map((l) => [l.verdict, l.missed])
    expect(got).toEqual([
      ['good', undefined],
      ['missed', ['ttft', 'tpot']],
      ['good', undefined], // non-streamed 2 s for 100 tokens: within 0.5 + 0.05 x 99 s
      ['missed', ['e2e']],
      ['client_error', undefined],
      ['failed', undefined],
      ['rejected', undefined],
      ['cancelled', undefined],
      ['invalid', undefined],
    ])
    telemetry.close()
  })

  it('judges once: the verdict logged is the one the recorder returned', async () => {
    let calls = 0
    const { acc, requestLines } = accounting({
      record: () => {
        calls++
        return { kind: 'missed', missed: ['tpot'] }
      },
    })
    acc.ended(ticket(0, { ttft: 100, e2e: 300, chunks: 11 }))
    await new Promise((r) => setImmediate(r))
    expect(calls).toBe(1)
    expect(requestLines()[0]).toMatchObject({ verdict: 'missed', missed: ['tpot'], outcome: 'ok' })
  })

  it('has no verdict when the recorder judges nothing (telemetry off, plain test recorders)', async () => {
    const tickets: Ticket[] = []
    for (const recorder of [{ record() {} }, { record: (t: Ticket) => tickets.push(t) }]) {
      const { acc, requestLines } = accounting(recorder)
      acc.ended(ticket(0, { ttft: 100, e2e: 300, chunks: 11 }))
      await new Promise((r) => setImmediate(r))
      expect(requestLines()).toHaveLength(1)
      expect(requestLines()[0]!.verdict).toBeUndefined()
      expect(requestLines()[0]!.outcome).toBe('ok')
    }
    expect(tickets).toHaveLength(1)
  })

  it('logs requests shed as overloaded as one warn line per window, counted each, not a line each', async () => {
    let recorded = 0
    const { acc, requestLines, lines } = accounting({ record: () => recorded++ })
    for (let i = 0; i < 500; i++)
      acc.ended(ticket(0, { outcome: 'rejected', errorCode: 'GW_ERR_OVERLOADED' }))
    acc.ended(ticket(0, { outcome: 'rejected', errorCode: 'GW_ERR_QUEUE_FULL' }))
    await new Promise((r) => setImmediate(r))
    expect(recorded).toBe(501) // telemetry counts every one
    expect(requestLines().map((l) => l.error)).toEqual(['GW_ERR_QUEUE_FULL'])
    await new Promise((r) => setTimeout(r, SHED_LOG_MS + 100))
    const shed = lines.filter((l) => l.error === 'GW_ERR_OVERLOADED')
    expect(shed).toHaveLength(1)
    expect(shed[0]).toMatchObject({ level: 40, shed: 500 })
    // the next window starts afresh
    acc.ended(ticket(0, { outcome: 'rejected', errorCode: 'GW_ERR_OVERLOADED' }))
    await new Promise((r) => setTimeout(r, SHED_LOG_MS + 100))
    expect(lines.filter((l) => l.error === 'GW_ERR_OVERLOADED').map((l) => l.shed)).toEqual([500, 1])
  })

  it('writes the pending shed summary at flush (the gateway closing), once', async () => {
    const { acc, lines } = accounting({ record() {} })
    acc.flush() // nothing shed: no line
    for (let i = 0; i < 3; i++) acc.ended(ticket(0, { outcome: 'rejected', errorCode: 'GW_ERR_OVERLOADED' }))
    acc.flush()
    await new Promise((r) => setImmediate(r))
    expect(lines.filter((l) => l.error === 'GW_ERR_OVERLOADED').map((l) => l.shed)).toEqual([3])
    // the window's timer was cleared: no second line when it would have fired
    await new Promise((r) => setTimeout(r, SHED_LOG_MS + 100))
    expect(lines.filter((l) => l.error === 'GW_ERR_OVERLOADED')).toHaveLength(1)
  })
})
