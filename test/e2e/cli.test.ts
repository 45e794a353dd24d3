import { join } from 'node:path'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream } from '../helpers/upstream.js'

const BAD = join(import.meta.dirname, '..', 'fixtures', 'config', 'three-mistakes.yaml')
const EXPECTED = [
  "server.port: expected a number, got 'eighty'",
  "backends.pools[0].endpoints[1]: expected an http(s) URL, got 'localhost'",
  "backends.pools[0]: unknown key 'scrape_intervall_ms'",
]

describe('slo-gateway CLI', () => {
  it('check-config prints all three mistakes with their paths and exits 1', async () => {
    const p = runCli(['check-config', BAD])
    expect(await p.exited).toBe(1)
    for (const e of EXPECTED) expect(p.stderr).toContain(`${BAD}: ${e}`)
  })

  it('check-config on a good file says ok and exits 0', async () => {
    const p = runCli(['check-config', join(import.meta.dirname, '..', '..', 'config', 'gateway.yaml')])
    expect(await p.exited).toBe(0)
    expect(p.stdout).toMatch(/ok \(0 pool\(s\), classes: interactive, batch\)/)
  })

  it('serve with a bad config prints the same messages, exits non-zero and never listens', async () => {
    const p = runCli(['serve', '--config', BAD])
    expect(await p.exited).toBe(1)
    for (const e of EXPECTED) expect(p.stderr).toContain(e)
    expect(p.stdout).not.toContain('listening')
  })

  it('every command has --help, and an unknown command is a usage error', async () => {
    for (const cmd of ['serve', 'check-config', 'sim']) {
      const p = runCli([cmd, '--help'])
      expect(await p.exited, cmd).toBe(0)
      expect(p.stdout, cmd).toMatch(/Usage/i)
    }
    const bad = runCli(['frobnicate'])
    expect(await bad.exited).toBe(2)
    expect(bad.stderr).toContain("unknown command 'frobnicate'")
  })
})

describe('graceful shutdown', () => {
  let up: FakeUpstream
  beforeAll(async () => {
    up = await startUpstream(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      for (let i = 0; i < 15; i++) {
        res.write(chunkEvent(`t${i} `))
        await sleep(100)
      }
      res.end('data: [DONE]\n\n')
    })
  })
  afterAll(() => up.close())

  it('on SIGTERM finishes 20 streams in flight, refuses new requests with 503, exits 0 in the grace period', async () => {
    const p = runCli([
      'serve',
      '--upstream',
      up.url,
      '--port',
      '0',
      '--admin-port',
      '0',
      '--set',
      'server.host=127.0.0.1',
      '--set',
      'server.admin_host=127.0.0.1',
      '--set',
      'server.shutdown_grace_ms=10000',
    ])
    const listening = await p.waitForLog((l) => typeof l.port === 'number' && typeof l.adminPort === 'number')
    const base = `http://127.0.0.1:${listening.port}`
    const admin = `http://127.0.0.1:${listening.adminPort}`
    for (let i = 0; i < 100; i++) {
      const r = await request(`${admin}/readyz`)
      await r.body.dump()
      if (r.statusCode === 200) break
      await sleep(50)
    }
    const streams = Array.from({ length: 20 }, async () => {
      const res = await request(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      })
      return { status: res.statusCode, text: await res.body.text() }
    })
    for (let i = 0; i < 100 && up.seen.length < 20; i++) await sleep(20)
    expect(up.seen.length).toBe(20)
    const t0 = performance.now()
    p.child.kill('SIGTERM')
    await sleep(200)
    const ready = await request(`${admin}/readyz`)
    expect(ready.statusCode).toBe(503)
    await ready.body.dump()
    const refused = await request(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [] }),
    })
    expect(refused.statusCode).toBe(503)
    expect(((await refused.body.json()) as { error: { code: string } }).error.code).toBe('GW_ERR_DRAINING')
    const results = await Promise.all(streams)
    for (const r of results) {
      expect(r.status).toBe(200)
      expect(r.text).toContain('t14 ')
      expect(r.text.endsWith('data: [DONE]\n\n')).toBe(true)
    }
    expect(await p.exited).toBe(0)
    expect(performance.now() - t0).toBeLessThan(10_000)
  })
})
