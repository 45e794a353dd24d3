/**
 * The client's arithmetic against a scripted SSE server on a real socket, in this process
 * (one clock): the server stamps each write, so the times the client measured can be checked
 * against when the chunks were really sent.
 */
import { Pool } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { streamRequest } from '../../../src/loadgen/stream-client.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream, usageEvent } from '../../helpers/upstream.js'

/** How far a measured time may be from the server's write stamp, ms. */
const SLACK = 10

let up: FakeUpstream
let pool: Pool

beforeAll(async () => {
  up = await startUpstream()
  pool = new Pool(up.url)
})
afterAll(async () => {
  await pool.close()
  await up.close()
})

const roleChunk = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] })}\n\n`
const req = {
  path: '/v1/chat/completions',
  body: '{}',
  headers: { 'content-type': 'application/json' },
  timeoutMs: 5000,
}

/** Writes `events` at `atMs` after the request came, stamping each write with performance.now(). */
function script(steps: { atMs: number; data: string }[], stamps: number[]): void {
  up.handler = async (_req, res) => {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'x-gateway-predicted-ttft-ms': '95',
      'x-gateway-class': 'interactive',
    })
    res.flushHeaders()
    const t0 = performance.now()
    for (const s of steps) {
      const wait = t0 + s.atMs - performance.now()
      if (wait > 0) await sleep(wait)
      res.write(s.data)
      stamps.push(performance.now())
    }
    res.end()
  }
}

describe('the streaming client times a response as vllm bench serve does', () => {
  it('TTFT at the first chunk with content, ITL per chunk, E2E at the last, TPOT from the usage', async () => {
    const stamps: number[] = []
    script(
      [
        { atMs: 10, data: roleChunk }, // a role-only first delta: not a token
        { atMs: 100, data: chunkEvent('Hel') },
        { atMs: 140, data: chunkEvent('lo') },
        { atMs: 200, data: chunkEvent(',') },
        { atMs: 290, data: chunkEvent(' world', 'stop') },
        { atMs: 320, data: usageEvent(12, 6) }, // 6 tokens in 4 chunks (a chunk may carry two)
        { atMs: 330, data: 'data: [DONE]\n\n' },
      ],
      stamps,
    )
    const before = performance.now()
    const t = await streamRequest(pool, req)
    expect(t.status).toBe(200)
    expect(t.error).toBeUndefined()
    const sent = stamps.map((s) => s - before) // when each event left the server, ms after dispatch
    const [, first, second, third, last] = sent as [number, number, number, number, number]
    // the client's times are the server's, plus loopback and this process's event-loop
    // delays (ms on a loaded machine; 2.2 ms seen in CI): within SLACK, which still names
    // the right chunk (they are 30 ms and more apart); the arithmetic is checked exactly below
    expect(Math.abs(t.ttftMs! - first)).toBeLessThan(SLACK)
    expect(t.itlMs).toHaveLength(3)
    const gaps = [second - first, third - second, last - third]
    for (const [i, g] of t.itlMs.entries()) expect(Math.abs(g - gaps[i]!)).toBeLessThan(SLACK)
    expect(Math.abs(t.e2eMs! - last)).toBeLessThan(SLACK)
    // E2E is the last content chunk, not the usage event or [DONE] after it
    expect(t.e2eMs!).toBeLessThan(sent[5]! - 10)
    expect(t.outputTokens).toBe(6)
    expect(t.promptTokens).toBe(12)
    expect(t.chunks).toBe(4)
    expect(t.tpotMs).toBeCloseTo((t.e2eMs! - t.ttftMs!) / 5, 9)
    expect(Math.abs(t.tpotMs! - (last - first) / 5)).toBeLessThan((2 * SLACK) / 5)
    expect(t.ttftMs! + t.itlMs.reduce((s, g) => s + g, 0)).toBeCloseTo(t.e2eMs!, 9)
    expect(t.headers).toEqual({ 'x-gateway-predicted-ttft-ms': '95', 'x-gateway-class': 'interactive' })
  })

  it('without usage in the stream, counts the chunks with content as the output tokens', async () => {
    script(
      [
        { atMs: 20, data: chunkEvent('a') },
        { atMs: 50, data: chunkEvent('b') },
        { atMs: 80, data: chunkEvent('c') },
        { atMs: 81, data: 'data: [DONE]\n\n' },
      ],
      [],
    )
    const t = await streamRequest(pool, req)
    expect(t.outputTokens).toBeUndefined()
    expect(t.chunks).toBe(3)
    expect(t.tpotMs).toBeCloseTo((t.e2eMs! - t.ttftMs!) / 2, 9)
  })

  it('a refusal: status, retry-after, the reason header and the error code, and how long it took', async () => {
    up.handler = (_req, res) => {
      res.writeHead(503, {
        'content-type': 'application/json',
        'retry-after': '2',
        'retry-after-ms': '1500',
        'x-gateway-reject-reason': 'ttft_slo',
        'x-ratelimit-limit-requests': '10',
      })
      res.end(
        JSON.stringify({
          error: { message: 'busy', type: 'server_error', code: 'GW_ERR_TTFT_SLO', param: null },
        }),
      )
    }
    const t = await streamRequest(pool, req)
    expect(t.status).toBe(503)
    expect(t.errorCode).toBe('GW_ERR_TTFT_SLO')
    expect(t.headers).toEqual({
      'retry-after': '2',
      'retry-after-ms': '1500',
      'x-gateway-reject-reason': 'ttft_slo',
    })
    expect(t.ttftMs).toBeUndefined()
    expect(t.latencyMs).toBeGreaterThan(0)
  })

  it('a stream that ends with an error event, or without [DONE], is a failure', async () => {
    const errorEvent = `data: ${JSON.stringify({ error: { message: 'x', type: 'server_error', code: 'GW_ERR_UPSTREAM_STREAM_FAILED' } })}\n\n`
    script(
      [
        { atMs: 5, data: chunkEvent('a') },
        { atMs: 10, data: errorEvent },
      ],
      [],
    )
    expect((await streamRequest(pool, req)).error).toBe('stream:GW_ERR_UPSTREAM_STREAM_FAILED')
    script([{ atMs: 5, data: chunkEvent('a') }], [])
    expect((await streamRequest(pool, req)).error).toBe('incomplete')
  })

  it('a request that outlives its timeout is cut and recorded as a timeout', async () => {
    script(
      [
        { atMs: 5, data: chunkEvent('a') },
        { atMs: 1000, data: chunkEvent('b') },
      ],
      [],
    )
    const t = await streamRequest(pool, { ...req, timeoutMs: 100 })
    expect(t.error).toBe('timeout')
    expect(t.latencyMs).toBeLessThan(900)
  })

  it('keeps the streamed text when asked (a conversation sends it back)', async () => {
    script(
      [
        { atMs: 1, data: chunkEvent('Hi') },
        { atMs: 2, data: chunkEvent(' there') },
        { atMs: 3, data: 'data: [DONE]\n\n' },
      ],
      [],
    )
    expect((await streamRequest(pool, { ...req, keepText: true })).text).toBe('Hi there')
  })
})
