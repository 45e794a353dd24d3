/**
 * The admin listener's errors are OpenAI-shaped, as the public listener's are: an unknown
 * route, a method a route does not take, a route that fails (its internal message logged,
 * never sent), bytes that never become a request (request smuggling, headers too large)
 * and a client too slow to send its headers. Real sockets; with and without the admin token.
 */
import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BackendsHandle } from '../../../src/backends/index.js'
import { readyBackends } from '../../helpers/backends.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { rawExchange } from '../../helpers/raw-http.js'
import { checkAnswer } from './answer-check.js'

const TOKEN = 'admin-errors-token'
const SECRET = 'a detail of the gateway the client must not see'

async function answer(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init)
  const headers: Record<string, string> = {}
  res.headers.forEach((v, k) => {
    headers[k] = v
  })
  return { status: res.status, headers, body: await res.text() }
}

describe('admin listener errors', { timeout: 30_000 }, () => {
  let backends: BackendsHandle
  let open: TestGateway
  let locked: TestGateway

  beforeAll(async () => {
    backends = await readyBackends([])
    const server = { headers_timeout_ms: 500, request_timeout_ms: 1_000 }
    const failing = {
      state: {
        broken: () => {
          throw new Error(SECRET)
        },
      },
    }
    open = await startGateway(backends, { server }, undefined, failing)
    locked = await startGateway(
      backends,
      { server: { ...server, admin_token_sha256: createHash('sha256').update(TOKEN).digest('hex') } },
      undefined,
      failing,
    )
  })
  afterAll(async () => {
    await open?.close()
    await locked?.close()
  })

  it('an unknown route or method: 404 GW_ERR_ROUTE_NOT_FOUND, OpenAI-shaped', async () => {
    for (const [path, method] of [
      ['/nope', 'GET'],
      ['/admin/nope?x=1', 'GET'],
      ['/metrics', 'POST'],
      ['/admin/state', 'DELETE'],
    ] as const) {
      const a = await answer(`${open.adminUrl}${path}`, { method })
      expect(a.status, `${method} ${path}`).toBe(404)
      expect(checkAnswer(a, `${method} ${path}`, { mustRefuse: true })).toBe('GW_ERR_ROUTE_NOT_FOUND')
      expect(JSON.parse(a.body).error.message).toBe(`No route for ${method} ${path.split('?')[0]}.`)
    }
  })

  it('with the admin token set: 401 without it, 404 OpenAI-shaped with it', async () => {
    const without = await answer(`${locked.adminUrl}/nope`)
    expect(without.status).toBe(401)
    expect(checkAnswer(without, 'no token', { mustRefuse: true })).toBe('GW_ERR_ADMIN_UNAUTHORIZED')
    const withIt = await answer(`${locked.adminUrl}/nope`, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(withIt.status).toBe(404)
    expect(checkAnswer(withIt, 'token', { mustRefuse: true })).toBe('GW_ERR_ROUTE_NOT_FOUND')
  })

  it('a route that fails: 500 GW_ERR_INTERNAL, OpenAI-shaped, the internal message logged and not sent', async () => {
    for (const gw of [open, locked]) {
      const a = await answer(`${gw.adminUrl}/admin/state`, { headers: { authorization: `Bearer ${TOKEN}` } })
      expect(a.status).toBe(500)
      const err = JSON.parse(a.body).error
      expect(Object.keys(err).sort()).toEqual(['code', 'message', 'param', 'type'])
      expect(err).toMatchObject({ code: 'GW_ERR_INTERNAL', type: 'server_error' })
      expect(a.body).not.toContain(SECRET)
      expect(a.headers['content-type']).toContain('application/json')
      const logged = gw.logs.find((l) => l.msg === 'admin route failed')
      expect(JSON.stringify(logged)).toContain(SECRET)
    }
  })

  it('request smuggling on the admin socket: 400 GW_ERR_MALFORMED_REQUEST and the connection closed', async () => {
    const r = await rawExchange(open.adminUrl, [
      'GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /admin/state HTTP/1.1\r\nHost: x\r\n\r\n',
    ])
    expect(r.closed).toBe(true)
    expect(r.responses.length, r.raw).toBe(1)
    expect(r.responses[0]?.status).toBe(400)
    expect(checkAnswer(r.responses[0]!, 'CL.TE', { mustRefuse: true })).toBe('GW_ERR_MALFORMED_REQUEST')
  })

  it('headers over 16 KiB: 431 GW_ERR_HEADERS_TOO_LARGE', async () => {
    const r = await rawExchange(open.adminUrl, [
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`,
    ])
    expect(r.responses[0]?.status).toBe(431)
    expect(checkAnswer(r.responses[0]!, '431', { mustRefuse: true })).toBe('GW_ERR_HEADERS_TOO_LARGE')
  })

  it('headers sent too slowly (slowloris): 408 GW_ERR_REQUEST_TIMEOUT and closed, then it answers', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `X-Slow-${i}: ${i}\r\n`)
    const r = await rawExchange(open.adminUrl, ['GET /metrics HTTP/1.1\r\nHost: x\r\n', ...lines], {
      gapMs: 150,
      timeoutMs: 10_000,
    })
    expect(r.closed).toBe(true)
    expect(r.responses[0]?.status).toBe(408)
    expect(checkAnswer(r.responses[0]!, '408', { mustRefuse: true })).toBe('GW_ERR_REQUEST_TIMEOUT')
    expect((await fetch(`${open.adminUrl}/healthz`)).status).toBe(200)
  })
})
