/**
 * Security: what a hostile or careless client must never get. Keys and prompts never in a
 * log line, at any level and on every path (served, streamed, refused, failed upstream);
 * no client-chosen upstream (SSRF): whatever the request names, it goes to a configured
 * endpoint or nowhere; authentication on unless a config turns anonymous access on (only
 * the demo config does, and says so).
 */

import { readdirSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_CONFIG_FILE, loadConfig } from '../../../src/config/load.js'
import { configSchema } from '../../../src/config/schema.js'
import { rawExchange } from '../../helpers/raw-http.js'
import { type FuzzStack, GOOD_KEY, startFuzzStack } from './fuzz-stack.js'

const PROMPT = 'PROMPT-SECRET-7f3a9c'
const ROOT = join(import.meta.dirname, '..', '..', '..')

describe('keys and prompts never reach the logs', { timeout: 60_000 }, () => {
  let s: FuzzStack
  beforeAll(async () => {
    s = await startFuzzStack({
      anonymous: false,
      level: 'trace',
      // the server fails in every way a server can, echoing what it was sent
      override: (_req, res, body) => {
        if (body.includes('fail-500')) {
          res.writeHead(500, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ error: { message: body } }))
          return true
        }
        if (body.includes('fail-reset')) {
          res.socket?.destroy()
          return true
        }
        if (body.includes('fail-midstream')) {
          res.writeHead(200, { 'content-type': 'text/event-stream' })
          res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: PROMPT } }] })}\n\n`)
          setTimeout(() => res.socket?.destroy(), 20)
          return true
        }
        return false
      },
    })
  })
  afterAll(async () => {
    await s?.close()
  })

  it('redacts the key and leaves the prompt out on every path, even at trace level', async () => {
    const send = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${s.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${GOOD_KEY}`, ...headers },
        body,
      }).then(async (r) => ({ status: r.status, text: await r.text() }))
    const chat = (content: string, extra: object = {}) =>
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content }], max_tokens: 2, ...extra })
    const statuses = [
      (await send(chat(PROMPT))).status,
      (await send(chat(PROMPT, { stream: true }))).status,
      (await send(`{"model":"m","messages":[{"content":"${PROMPT}"`)).status, // broken JSON
      (await send(chat(PROMPT, { model: 'unclaimed-model' }))).status, // a model no pool claims: the * pool
      (await send(chat(PROMPT), { 'x-api-key': GOOD_KEY, authorization: `Bearer ${GOOD_KEY}x` })).status,
      (await send(chat(PROMPT), { cookie: `session=${GOOD_KEY}` })).status,
      (await send(chat(PROMPT, { max_tokens: -1 }))).status,
      // the server fails: three in a row (then its endpoint is ejected for a while)
      (await send(chat(`${PROMPT} fail-500`))).status,
      (await send(chat(`${PROMPT} fail-reset`))).status,
      (await send(chat(`${PROMPT} fail-midstream`, { stream: true }))).status,
    ]
    expect(statuses).toEqual([200, 200, 400, 200, 401, 200, 400, 500, 502, 200])
    // a raw request the parser refuses, with the key in it
    await rawExchange(s.url, [
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GOOD_KEY}\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n${PROMPT}`,
    ])
    const logs = s.logText.join('\n')
    expect(s.logText.length).toBeGreaterThan(10)
    expect(logs).toContain('"msg":"request"')
    expect(logs).not.toContain(GOOD_KEY)
    expect(logs).not.toContain(PROMPT)
  })
})

describe('no client-chosen upstream (SSRF)', { timeout: 60_000 }, () => {
  let s: FuzzStack
  let evil: Server
  let evilUrl = ''
  let evilHits = 0
  beforeAll(async () => {
    evil = createServer((_req, res) => {
      evilHits++
      res.end('{}')
    })
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve))
    evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`
    s = await startFuzzStack({ anonymous: true })
  })
  afterAll(async () => {
    await s?.close()
    await new Promise((resolve) => evil.close(resolve))
  })

  it('sends nothing to a server the request names, however it names it', async () => {
    const host = new URL(evilUrl).host
    const body = (model: string) =>
      JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })
    const before = s.upstreamRequests()
    const attempts: [string, RequestInit & { path?: string }][] = [
      ['a model that is a URL', { body: body(`${evilUrl}/v1`) }],
      ['a Host header', { body: body('m'), headers: { host } }],
      ['x-forwarded-host', { body: body('m'), headers: { 'x-forwarded-host': host } }],
      ['x-gateway-backend', { body: body('m'), headers: { 'x-gateway-backend': evilUrl } }],
      ['x-gateway-upstream', { body: body('m'), headers: { 'x-gateway-upstream': evilUrl } }],
      ['a raw route with a full URL in its path', { body: '{}', path: `/v1/${encodeURIComponent(evilUrl)}` }],
      ['a raw route climbing out of /v1', { body: '{}', path: '/v1/..%2f..%2f' }],
    ]
    for (const [name, init] of attempts) {
      const { path = '/v1/chat/completions', ...rest } = init
      const res = await fetch(`${s.url}${path}`, {
        method: 'POST',
        ...rest,
        headers: { 'content-type': 'application/json', ...(rest.headers as Record<string, string>) },
      })
      await res.text()
      expect(res.status, name).toBeLessThan(500)
    }
    // absolute-form request targets, as a forward proxy would take them
    for (const target of [`${evilUrl}/v1/chat/completions`, `${evilUrl}/v1/models`, `//${host}/v1/files`]) {
      await rawExchange(s.url, [
        `POST ${target} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
      ])
    }
    expect(evilHits).toBe(0)
    // what was served went to the configured server
    expect(s.upstreamRequests()).toBeGreaterThan(before)
  })
})

describe('authentication is on unless a config turns anonymous access on', () => {
  it('a config without an auth section serves no one without a key', () => {
    expect(configSchema.parse({}).auth.anonymous).toBeUndefined()
  })

  it('every shipped example config requires keys; only the demo (the embedded default) is anonymous', () => {
    const dir = join(ROOT, 'config', 'examples')
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'))
    expect(files.length).toBeGreaterThan(2)
    for (const f of files) {
      const { config } = loadConfig(join(dir, f), {}, { SLO_GATEWAY_REDIS_URL: 'redis://127.0.0.1:6379' })
      expect(config.auth.anonymous, f).toBeUndefined()
    }
    expect(loadConfig(DEFAULT_CONFIG_FILE).config.auth.anonymous).toBe('demo')
  })
})
