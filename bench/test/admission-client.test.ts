import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { Pool } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { sendOne } from '../admission-client.js'
import type { Arrival } from '../admission-workload.js'

const arrival: Arrival = { seq: 1, atMs: 0, cls: 'interactive', promptTokens: 40, outputTokens: 3 }

const token = (i: number) => `data: {"choices":[{"index":0,"delta":{"content":"t${i} é"}}]}\n\n`
const USAGE = 'data: {"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":3}}\n\n'

let server: Server | undefined
let pool: Pool | undefined
afterEach(async () => {
  await pool?.destroy()
  server?.closeAllConnections()
  await new Promise((r) => server?.close(r))
  server = undefined
  pool = undefined
})

async function serve(handle: (res: ServerResponse, body: string) => void): Promise<string> {
  server = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => {
      body += c
    })
    req.on('end', () => handle(res, body))
  })
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function context(url: string, signal = new AbortController().signal) {
  pool = new Pool(url, { connections: 4, headersTimeout: 0, bodyTimeout: 0 })
  return { client: pool, model: 'm', tag: 't', t0: performance.now(), signal }
}

describe('the admission bench client (real sockets)', () => {
  it('stamps each content token as its event completes, across chunk boundaries, and reads usage', async () => {
    let sent = ''
    const url = await serve(async (res, body) => {
      sent = body
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-gateway-predicted-ttft-ms': '120' })
      res.write(token(0).slice(0, 20)) // an event cut in two
      await sleep(20)
      res.write(token(0).slice(20) + token(1))
      await sleep(20)
      res.write(token(2) + USAGE + 'data: [DONE]\n\n')
      res.end()
    })
    const o = await sendOne(context(url), arrival, 0)
    expect(o.status).toBe(200)
    expect(o.done).toBe(true)
    expect(o.cut).toBe(false)
    expect(o.predictedTtftMs).toBe(120)
    expect(o.usageTokens).toBe(3)
    expect(o.tokenMs).toHaveLength(3)
    // the first token completes with the second chunk, 20 ms after the first chunk
    const [t0, t1, t2] = o.tokenMs as [number, number, number]
    expect(t1).toBe(t0)
    expect(t2 - t1).toBeGreaterThan(10)
    expect(o.headersMs).toBeLessThan(t0)
    expect(JSON.parse(sent)).toMatchObject({ model: 'm', stream: true, max_tokens: 3 })
    expect(o.writtenMs).toBeGreaterThanOrEqual(o.sentMs)
    expect(o.newConnection).toBe(true)
  })

  it("reads a refusal's reason, Retry-After, the gateway's hold and its predicted TTFT", async () => {
    const url = await serve((res) => {
      res.writeHead(503, {
        'content-type': 'application/json',
        'x-gateway-reject-reason': 'ttft_slo',
        'retry-after': '2',
        'retry-after-ms': '1250',
        'server-timing': 'gateway;dur=0.42',
      })
      res.end(JSON.stringify({ error: { message: 'predicted 812 ms against an objective of 500 ms' } }))
    })
    const ctx = context(url)
    const o = await sendOne(ctx, arrival, 0)
    expect(o).toMatchObject({
      status: 503,
      rejectReason: 'ttft_slo',
      retryAfterS: 2,
      retryAfterMs: 1250,
      gatewayMs: 0.42,
    })
    expect(o.refusedPredictedMs).toBe(812)
    expect(o.done).toBe(true)
    expect(o.tokenMs).toHaveLength(0)
    // a second request goes on the connection the first left open (once undici has freed it)
    await sleep(10)
    const again = await sendOne(ctx, arrival, 0)
    expect(again.newConnection).toBe(false)
  })

  it('ends a stream at the cut-off as cut, and a request to nowhere as an error, without throwing', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(token(0)) // and never more
    })
    const ac = new AbortController()
    const pending = sendOne(context(url, ac.signal), arrival, 0)
    await sleep(50)
    ac.abort()
    const o = await pending
    expect(o).toMatchObject({ status: 200, cut: true, done: false })
    expect(o.tokenMs).toHaveLength(1)

    const closed = new Pool('http://127.0.0.1:1', { connections: 1 })
    const none = await sendOne({ ...context(url), client: closed }, arrival, 0)
    await closed.destroy()
    expect(none.status).toBe(0)
    expect(none.error).toBeDefined()
    expect(none.cut).toBe(false)
  })
})
