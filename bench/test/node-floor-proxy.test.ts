/** The Node floor proxy (bench/node-floor-proxy.ts): a yardstick must still be a proxy. */
import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../processes.js'

const FLOOR = join(import.meta.dirname, '..', 'node-floor-proxy.ts')

describe('node-floor-proxy', () => {
  let upstream: Server
  let origin = ''
  let stop = () => {}
  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let body = ''
      req.on('data', (c) => (body += c))
      req.on('end', () => {
        if (req.url === '/stream') {
          res.writeHead(200, { 'content-type': 'text/event-stream' })
          res.write('data: 1\n\n')
          setTimeout(() => res.end('data: [DONE]\n\n'), 20)
          return
        }
        res.writeHead(200, { 'content-type': 'application/json', 'x-up': 'yes' })
        res.end(JSON.stringify({ echoed: JSON.parse(body), path: req.url }))
      })
    })
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
    const up = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
    const port = await freePort()
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', FLOOR, '--port', String(port), '--upstream', up],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    stop = () => child.kill()
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (b: Buffer) => b.includes('listening') && resolve()),
    )
    origin = `http://127.0.0.1:${port}`
  })
  afterAll(async () => {
    stop()
    await new Promise((r) => upstream.close(r))
  })

  it('forwards a JSON request and relays the answer with its headers', async () => {
    const res = await request(`${origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', n: 1 }),
    })
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-up']).toBe('yes')
    expect(await res.body.json()).toEqual({ echoed: { model: 'm', n: 1 }, path: '/v1/chat/completions' })
  })

  it('streams, and refuses a body that is not JSON with 400', async () => {
    const s = await request(`${origin}/stream`, { method: 'POST', body: '{}' })
    expect(await s.body.text()).toBe('data: 1\n\ndata: [DONE]\n\n')
    const bad = await request(`${origin}/v1/chat/completions`, { method: 'POST', body: '{nope' })
    await bad.body.dump()
    expect(bad.statusCode).toBe(400)
  })
})
