import { connect } from 'node:net'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readyBackends } from '../../helpers/backends.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream } from '../../helpers/upstream.js'

/**
 * A URL nothing listens on. Port 1 (tcpmux) is unused on any machine that runs these tests;
 * a port freed after a listen(0) is not safe: a test running beside this one can be given
 * the same port by the kernel and answer on it (seen in CI: a 404 for the expected 502).
 */
async function closedPortUrl(): Promise<string> {
  const refused = await new Promise<boolean>((resolve) => {
    const s = connect(1, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(false)
    })
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'))
  })
  if (!refused)
    throw new Error(
      '127.0.0.1:1 accepts connections on this machine: the refused-connection test needs it closed',
    )
  return 'http://127.0.0.1:1'
}

async function post(url: string, body: object) {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() }
}

const chat = { model: 'm', messages: [{ role: 'user', content: 'hi' }] }

describe('upstream faults', () => {
  let up: FakeUpstream
  let gw: TestGateway

  beforeAll(async () => {
    up = await startUpstream()
    gw = await startGateway(
      await readyBackends([up.url], { upstream: { headers_timeout_ms: 300, body_timeout_ms: 300 } }),
    )
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  async function stillServes() {
    up.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"ok":true}')
    }
    const r = await post(gw.url, chat)
    expect(r.status).toBe(200)
    expect(r.text).toBe('{"ok":true}')
  }

  it('answers 502 when the connection is refused', async () => {
    const refused = await startGateway(await readyBackends([await closedPortUrl()], {}, { fail_open: true }))
    try {
      const r = await post(refused.url, chat)
      expect(r.status).toBe(502)
      expect(JSON.parse(r.text).error.code).toBe('GW_ERR_UPSTREAM_UNREACHABLE')
      expect(r.text).not.toContain('127.0.0.1') // no internal address leaks
    } finally {
      await refused.close()
    }
  })

  it('answers 502 when the upstream resets before its headers', async () => {
    up.handler = (req) => req.socket.destroy()
    const r = await post(gw.url, chat)
    expect(r.status).toBe(502)
    expect(JSON.parse(r.text).error).toMatchObject({ code: 'GW_ERR_UPSTREAM_RESET', type: 'server_error' })
    await stillServes()
  })

  it('answers 504 when no headers come within the timeout', async () => {
    up.handler = () => {}
    const r = await post(gw.url, chat)
    expect(r.status).toBe(504)
    expect(JSON.parse(r.text).error.code).toBe('GW_ERR_UPSTREAM_TIMEOUT')
    await stillServes()
  })

  it('ends a stream broken midway with a final error event', async () => {
    up.handler = async (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(chunkEvent('a'))
      res.write(chunkEvent('b'))
      await sleep(20)
      res.write('data: {"partial') // an event cut in half, never completed
      await sleep(20)
      req.socket.destroy()
    }
    const r = await post(gw.url, { ...chat, stream: true })
    expect(r.status).toBe(200)
    const events = r.text.split('\n\n').filter(Boolean)
    expect(events.slice(0, 2)).toEqual([chunkEvent('a').trim(), chunkEvent('b').trim()])
    expect(events).toHaveLength(3)
    const last = JSON.parse(events[2]!.slice('data: '.length))
    expect(last.error).toMatchObject({ code: 'GW_ERR_UPSTREAM_STREAM_FAILED', type: 'server_error' })
    expect(gw.tickets.at(-1)?.outcome).toBe('failed')
    await stillServes()
  })

  it('ends a stream that stalls past the body timeout with a final error event', async () => {
    up.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(chunkEvent('a'))
    }
    const r = await post(gw.url, { ...chat, stream: true })
    const events = r.text.split('\n\n').filter(Boolean)
    expect(events).toHaveLength(2)
    expect(JSON.parse(events[1]!.slice(6)).error.code).toBe('GW_ERR_UPSTREAM_STREAM_FAILED')
    await stillServes()
  })

  it('relays upstream 4xx and 5xx answers as they are', async () => {
    up.handler = (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' })
      res.end('{"object":"error","message":"too long","type":"BadRequestError","param":null,"code":400}')
    }
    const r = await post(gw.url, chat)
    expect(r.status).toBe(400)
    expect(JSON.parse(r.text).message).toBe('too long')
    expect(gw.tickets.at(-1)?.outcome).toBe('upstream_error')
  })
})
