/**
 * A client that stops reading: the gateway must not buffer the server's whole answer for
 * it. When the client's socket is full, the upstream is paused until it drains, and every
 * event arrives, in order, once the client reads again. Real sockets on both sides.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inflight, readyBackends } from '../../helpers/backends.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { openSocket } from '../../helpers/raw-http.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream } from '../../helpers/upstream.js'

const EVENTS = 40_000
const PAD = 'x'.repeat(1500)
const TOTAL = EVENTS * Buffer.byteLength(chunkEvent(`00000 ${PAD}`))

describe('a client that stops reading a stream', { timeout: 60_000 }, () => {
  let up: FakeUpstream
  let gw: TestGateway
  let backends: Awaited<ReturnType<typeof readyBackends>>
  let written = 0

  beforeAll(async () => {
    up = await startUpstream(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      for (let i = 0; i < EVENTS && !res.destroyed; i++) {
        const event = chunkEvent(`${String(i).padStart(5, '0')} ${PAD}`)
        written += Buffer.byteLength(event)
        if (!res.write(event)) await new Promise((r) => res.once('drain', r))
      }
      res.end('data: [DONE]\n\n')
    })
    backends = await readyBackends([up.url])
    gw = await startGateway(backends)
  })
  afterAll(async () => {
    await gw?.close()
    await up?.close()
  })

  // 66 MB: the buffers on the way (kernel, Node) held 8-10 MB here while paused
  it("pauses the server while the client's socket is full, then relays every event in order", async () => {
    const payload = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] })
    const socket = await openSocket(gw.url)
    const received: Buffer[] = []
    socket.on('data', (c: Buffer) => received.push(c))
    const closed = new Promise<void>((r) => socket.on('close', () => r()))
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
    )
    // read the headers and a little, then stop reading
    while (received.length === 0) await sleep(5)
    socket.pause()
    await sleep(800)
    const whilePaused = written
    // the kernel's buffers and the streams' high-water marks hold a few MB at most; a
    // gateway that did not pause would have read all of it by now
    expect(whilePaused).toBeLessThan(TOTAL / 2)
    socket.resume()
    await closed
    const text = Buffer.concat(received).toString()
    const seq = [...text.matchAll(/"content":"(\d{5}) /g)].map((m) => Number(m[1]))
    expect(seq).toHaveLength(EVENTS)
    expect(seq.every((n, i) => n === i)).toBe(true)
    // the last event, then the chunked body's end
    expect(text.endsWith('data: [DONE]\n\n\r\n0\r\n\r\n')).toBe(true)
    await sleep(50)
    expect(inflight(backends)).toBe(0)
  })
})
