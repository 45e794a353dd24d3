import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readyBackends } from '../../helpers/backends.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { type FakeUpstream, startUpstream } from '../../helpers/upstream.js'

function expectOpenAIError(body: string, code: string) {
  const parsed = JSON.parse(body) as { error: Record<string, unknown> }
  expect(Object.keys(parsed.error).sort()).toEqual(['code', 'message', 'param', 'type'])
  expect(parsed.error.code).toBe(code)
  expect(typeof parsed.error.message).toBe('string')
  expect(parsed.error.message).not.toMatch(/at .*\.(ts|js):\d+/) // no stack
}

describe('bad input', () => {
  let up: FakeUpstream
  let gw: TestGateway

  beforeAll(async () => {
    up = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ id: 'x', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } }))
    })
    gw = await startGateway(await readyBackends([up.url]), { server: { body_limit_bytes: 1024 } })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  const cases: [
    string,
    { method: 'POST' | 'GET'; url: string; headers?: Record<string, string>; payload?: string },
    number,
    string,
  ][] = [
    [
      'invalid JSON',
      { method: 'POST', url: '/v1/chat/completions', payload: '{"model": ' },
      400,
      'GW_ERR_INVALID_JSON',
    ],
    [
      'a JSON array',
      { method: 'POST', url: '/v1/chat/completions', payload: '[1,2]' },
      400,
      'GW_ERR_INVALID_BODY',
    ],
    [
      'a JSON string',
      { method: 'POST', url: '/v1/completions', payload: '"hi"' },
      400,
      'GW_ERR_INVALID_BODY',
    ],
    [
      'an empty JSON body',
      { method: 'POST', url: '/v1/chat/completions', payload: '' },
      400,
      'GW_ERR_EMPTY_BODY',
    ],
    [
      'a non-JSON content type',
      {
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { 'content-type': 'text/plain' },
        payload: 'hello',
      },
      415,
      'GW_ERR_UNSUPPORTED_MEDIA_TYPE',
    ],
    [
      'a body over the limit',
      {
        method: 'POST',
        url: '/v1/chat/completions',
        payload: JSON.stringify({ model: 'm', pad: 'x'.repeat(2000) }),
      },
      413,
      'GW_ERR_BODY_TOO_LARGE',
    ],
    ['an unknown route', { method: 'GET', url: '/nope' }, 404, 'GW_ERR_ROUTE_NOT_FOUND'],
    [
      'an unknown POST route',
      { method: 'POST', url: '/v2/chat', payload: '{}' },
      404,
      'GW_ERR_ROUTE_NOT_FOUND',
    ],
  ]

  for (const [name, req, status, code] of cases) {
    it(`answers ${name} with ${status} ${code}, then serves the next request`, async () => {
      const res = await gw.gateway.app.inject({
        method: req.method,
        url: req.url,
        headers: { 'content-type': 'application/json', ...req.headers },
        ...(req.payload === undefined ? {} : { payload: req.payload }),
      })
      expect(res.statusCode).toBe(status)
      expect(res.headers['content-type']).toMatch(/application\/json/)
      expectOpenAIError(res.body, code)
      const ok = await gw.gateway.app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      })
      expect(ok.statusCode).toBe(200)
    })
  }

  it('tells the client not to retry a request that cannot succeed', async () => {
    const res = await gw.gateway.app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: '[]',
      headers: { 'content-type': 'application/json' },
    })
    expect(res.headers['x-should-retry']).toBe('false')
  })

  it('counts refused requests with outcome invalid', async () => {
    const before = gw.tickets.length
    await gw.gateway.app.inject({ method: 'GET', url: '/nope' })
    expect(gw.tickets.length).toBe(before + 1)
    expect(gw.tickets.at(-1)?.outcome).toBe('invalid')
  })
})
