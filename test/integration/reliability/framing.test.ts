/**
 * HTTP framing on real sockets: request smuggling (Content-Length against
 * Transfer-Encoding, two lengths, broken chunks), headers too large, slowloris (headers or
 * a body sent too slowly) and the connection limit. Each is refused with an OpenAI-shaped
 * error and a closed connection, nothing smuggled reaches the model server as a request
 * of its own, and the gateway goes on serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openSocket, type RawResponse, rawExchange } from '../../helpers/raw-http.js'
import { sleep } from '../../helpers/upstream.js'
import { checkAnswer } from './answer-check.js'
import { type FuzzStack, startFuzzStack } from './fuzz-stack.js'

const CHAT = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })
const SMUGGLED = 'GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n'

function expectRefused(r: RawResponse | undefined, status: number, code: string): void {
  expect(r, 'a response').toBeDefined()
  const res = r as RawResponse
  expect(res.status).toBe(status)
  expect(checkAnswer(res, `${status} ${code}`, { mustRefuse: true })).toBe(code)
}

describe('HTTP framing and slow clients (real sockets)', { timeout: 60_000 }, () => {
  let s: FuzzStack

  beforeAll(async () => {
    s = await startFuzzStack({
      anonymous: true,
      raw: { server: { headers_timeout_ms: 600, request_timeout_ms: 1_500 } },
    })
  })
  afterAll(async () => {
    await s?.close()
  })

  const serves = async () => {
    const res = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: CHAT,
    })
    expect(res.status).toBe(200)
  }

  const smuggling: [string, string][] = [
    [
      'Content-Length and Transfer-Encoding: chunked together (CL.TE / TE.CL)',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${CHAT.length}\r\nTransfer-Encoding: chunked\r\n\r\n${CHAT.length.toString(16)}\r\n${CHAT}\r\n0\r\n\r\n${SMUGGLED}`,
    ],
    [
      'two different Content-Length headers',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${CHAT.length}\r\nContent-Length: 5\r\n\r\n${CHAT}${SMUGGLED}`,
    ],
    [
      'an obfuscated Transfer-Encoding beside Content-Length',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n${SMUGGLED}`,
    ],
    [
      'Transfer-Encoding: chunked, identity',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n${SMUGGLED}`,
    ],
    [
      'a space before the colon of Content-Length',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length : 2\r\n\r\n{}${SMUGGLED}`,
    ],
    [
      'a chunk size that is not hex',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n${SMUGGLED}`,
    ],
    [
      'a header folded over two lines (obs-fold)',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nX-Priority: batch\r\n interactive\r\n\r\n{}${SMUGGLED}`,
    ],
    [
      'a negative Content-Length',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n${SMUGGLED}`,
    ],
    [
      'a bare LF line ending in the headers',
      `POST /v1/chat/completions HTTP/1.1\nHost: x\nContent-Length: 2\n\n{}${SMUGGLED}`,
    ],
  ]

  for (const [name, bytes] of smuggling) {
    it(`refuses ${name} with 400 and closes, nothing smuggled`, async () => {
      const before = s.upstreamRequests()
      const r = await rawExchange(s.url, [bytes])
      expect(r.closed).toBe(true)
      expect(r.responses.length, r.raw).toBe(1)
      expectRefused(r.responses[0], 400, 'GW_ERR_MALFORMED_REQUEST')
      expect(r.responses[0]?.headers.connection).toBe('close')
      expect(s.upstreamRequests()).toBe(before)
      await serves()
    })
  }

  it('answers headers over 16 KiB with 431', async () => {
    const r = await rawExchange(s.url, [
      `GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`,
    ])
    expectRefused(r.responses[0], 431, 'GW_ERR_HEADERS_TOO_LARGE')
    await serves()
  })

  it('answers headers sent too slowly (slowloris) with 408 and closes the connection', async () => {
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n`
    // one header line every 150 ms, never the blank line: past headers_timeout_ms (600)
    const lines = Array.from({ length: 40 }, (_, i) => `X-Slow-${i}: ${i}\r\n`)
    const r = await rawExchange(s.url, [head, ...lines], { gapMs: 150, timeoutMs: 15_000 })
    expect(r.closed).toBe(true)
    expectRefused(r.responses[0], 408, 'GW_ERR_REQUEST_TIMEOUT')
    await serves()
  })

  it('answers a body sent too slowly with 408 and closes the connection', async () => {
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":"m",`
    const drip = Array.from({ length: 40 }, () => ' ')
    const before = s.upstreamRequests()
    const r = await rawExchange(s.url, [head, ...drip], { gapMs: 150, timeoutMs: 15_000 })
    expect(r.closed).toBe(true)
    // Node may already have handed the request to the gateway: then the cut body ends it
    // as a client that left, with no answer to send; either way it never reaches the server
    if (r.responses.length > 0) expectRefused(r.responses[0], 408, 'GW_ERR_REQUEST_TIMEOUT')
    expect(s.upstreamRequests()).toBe(before)
    await serves()
  })

  it('keeps a slow client from holding the gateway: many at once, all cut, then it serves', async () => {
    const slow = Array.from({ length: 50 }, () =>
      rawExchange(
        s.url,
        ['POST /v1/chat/completions HTTP/1.1\r\n', 'Host: x\r\n', 'X-A: 1\r\n', 'X-B: 2\r\n'],
        {
          gapMs: 400,
          timeoutMs: 15_000,
        },
      ),
    )
    const results = await Promise.all(slow)
    for (const r of results) expect(r.closed).toBe(true)
    await serves()
  })
})

describe('the connection limit (server.max_connections)', { timeout: 60_000 }, () => {
  let s: FuzzStack
  beforeAll(async () => {
    s = await startFuzzStack({ anonymous: true, raw: { server: { max_connections: 5 } } })
  })
  afterAll(async () => {
    await s?.close()
  })

  it('closes connections over the limit as they are accepted, and serves again once under it', async () => {
    const held = await Promise.all(Array.from({ length: 5 }, () => openSocket(s.url)))
    await sleep(100)
    const over = await rawExchange(s.url, ['GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n'], {
      timeoutMs: 5_000,
    })
    expect(over.closed).toBe(true)
    expect(over.responses).toEqual([])
    for (const h of held) h.destroy()
    await sleep(200)
    const res = await fetch(`${s.url}/v1/models`)
    expect(res.status).toBe(200)
  })
})
