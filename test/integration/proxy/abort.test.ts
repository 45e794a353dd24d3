import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inflight, readyBackends } from '../../helpers/backends.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream } from '../../helpers/upstream.js'

/** Sends a raw HTTP request and returns the socket, so the test can cut it at will. */
function rawRequest(url: string, body: object) {
  const { hostname, port } = new URL(url)
  const payload = JSON.stringify(body)
  const socket = connect(Number(port), hostname)
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
  )
  const received: Buffer[] = []
  socket.on('data', (c: Buffer) => received.push(c))
  socket.on('error', () => {})
  return { socket, received }
}

async function until(cond: () => boolean, ms = 2000) {
  const end = performance.now() + ms
  while (!cond()) {
    if (performance.now() > end) throw new Error('condition not met in time')
    await sleep(5)
  }
}

describe('client disconnect', () => {
  let up: FakeUpstream
  let gw: TestGateway
  let backends: Awaited<ReturnType<typeof readyBackends>>

  beforeAll(async () => {
    up = await startUpstream()
    backends = await readyBackends([up.url])
    gw = await startGateway(backends)
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  it('aborts the upstream request within 100 ms when the client leaves mid-stream', async () => {
    up.handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      for (let i = 0; i < 100 && !res.destroyed; i++) {
        res.write(chunkEvent(`t${i}`))
        await sleep(20)
      }
      res.end()
    }
    const { socket, received } = rawRequest(gw.url, { model: 'm', stream: true, messages: [] })
    await until(() => Buffer.concat(received).toString().includes('t2'))
    const cutAt = performance.now()
    socket.destroy()
    const seen = up.seen.at(-1)
    await until(() => seen?.abortedAt !== undefined)
    expect((seen?.abortedAt as number) - cutAt).toBeLessThan(100)
    await until(() => gw.tickets.length > 0 && inflight(backends) === 0)
    expect(gw.tickets.at(-1)?.outcome).toBe('cancelled')
  })

  it('aborts the upstream request within 100 ms when the client leaves before the upstream answered', async () => {
    up.handler = () => {} // never answers
    const before = up.seen.length
    const { socket } = rawRequest(gw.url, { model: 'm', stream: true, messages: [] })
    await until(() => up.seen.length > before)
    const cutAt = performance.now()
    socket.destroy()
    const seen = up.seen.at(-1)
    await until(() => seen?.abortedAt !== undefined)
    expect((seen?.abortedAt as number) - cutAt).toBeLessThan(100)
    await until(() => inflight(backends) === 0)
    expect(gw.tickets.at(-1)?.outcome).toBe('cancelled')
  })
})
