import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream } from '../helpers/upstream.js'

const ROOT = join(import.meta.dirname, '..', '..')
const BAD = join(ROOT, 'test', 'fixtures', 'config', 'three-mistakes.yaml')
const HIDDEN = join(ROOT, 'test', 'fixtures', 'config', 'hidden-errors.yaml')
const EXPECTED = [
  "server.port: expected a number, got 'eighty'",
  "backends.pools[0].endpoints[1]: expected an http(s) URL, got 'localhost'",
  "backends.pools[0]: unknown key 'scrape_intervall_ms': did you mean 'scrape_interval_ms'?",
]
const LOCAL = ['--set', 'server.host=127.0.0.1']

/** Holds a port on 127.0.0.1, as another process would. */
async function occupyPort(): Promise<{ port: number; server: Server }> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return { port: address.port, server }
}

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

  it('check-config reports every problem in one pass, in file order, and flags as given', async () => {
    const p = runCli(['check-config', HIDDEN, '--set', 'classes.interactive.slo.ttft_ms=abc'])
    expect(await p.exited).toBe(1)
    const lines = p.stderr.split('\n').filter((l) => l.startsWith('  '))
    expect(lines.map((l) => l.trim().split(': ').slice(0, 2).join(': '))).toEqual([
      `${HIDDEN}: server`,
      `${HIDDEN}: classes.Gold`,
      `${HIDDEN}: classes.silver.priority`,
      `${HIDDEN}: classes.silver.max_kv_usage`,
      `${HIDDEN}: classes.silver.reject_on_ttft`,
      `${HIDDEN}: classes.silver.degrade[0].model`,
      `${HIDDEN}: backends.pools[1]`,
      `${HIDDEN}: backends.pools[1].name`,
      '--set classes.interactive.slo.ttft_ms=abc: classes.interactive.slo.ttft_ms',
    ])
    expect(p.stderr).toContain("server: unknown key 'admin_prot': did you mean 'admin_port'?")
    expect(p.stderr).toContain('classes.Gold: class names are lower-case letters, digits, _ and -')
  })

  it('check-config of the embedded default notes that the simulator adds the pool', async () => {
    const p = runCli([
      'check-config',
      join(ROOT, 'config', 'gateway.yaml'),
      '--set',
      'simulator.enabled=false',
    ])
    expect(await p.exited).toBe(1)
    expect(p.stderr).toContain('backends.pools: no pool configured')
    const ok = runCli(['check-config', join(ROOT, 'config', 'gateway.yaml')])
    expect(await ok.exited).toBe(0)
    expect(ok.stdout).toContain(
      "backends.pools: note: none configured: the built-in simulator (simulator.enabled) adds pool 'sim'",
    )
  })

  it('--version and -v print the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    for (const flag of ['--version', '-v']) {
      const p = runCli([flag])
      expect(await p.exited, flag).toBe(0)
      expect(p.stdout, flag).toBe(`${version}\n`)
    }
  })

  it("an unknown flag is a usage error (exit 2) naming the flag, with that command's usage", async () => {
    const serve = runCli(['serve', '--upstrem', 'http://h:1'])
    expect(await serve.exited).toBe(2)
    expect(serve.stderr).toMatch(
      /^slo-gateway serve: unknown option '--upstrem': did you mean --upstream\?\n/,
    )
    expect(serve.stderr).toContain('Usage: slo-gateway serve [options]')
    const check = runCli(['check-config', BAD, '--frob'])
    expect(await check.exited).toBe(2)
    expect(check.stderr).toMatch(/^slo-gateway check-config: unknown option '--frob'\n/)
    expect(check.stderr).toContain('Usage: slo-gateway check-config FILE')
    const sim = runCli(['sim', '--frob'])
    expect(await sim.exited).toBe(2)
    expect(sim.stderr).toContain('--frob')
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

describe('ports in use', () => {
  it('the public port: one line, exit 1, and the simulator never starts', async () => {
    const { port, server } = await occupyPort()
    try {
      const p = runCli(['serve', '--port', String(port), '--admin-port', '0', ...LOCAL])
      expect(await p.exited).toBe(1)
      expect(p.stderr).toBe(`slo-gateway: port ${port} is in use: use --port or SLO_GATEWAY_PORT\n`)
      expect(p.stdout).not.toContain('built-in simulator started')
    } finally {
      server.close()
    }
  })

  it('the admin port (on 127.0.0.1 by default): the same, naming its flag', async () => {
    const { port, server } = await occupyPort()
    try {
      const p = runCli(['serve', '--port', '0', ...LOCAL], { SLO_GATEWAY_ADMIN_PORT: String(port) })
      expect(await p.exited).toBe(1)
      expect(p.stderr).toBe(
        `slo-gateway: admin port ${port} is in use: use --admin-port or SLO_GATEWAY_ADMIN_PORT\n`,
      )
      expect(p.stdout).not.toContain('built-in simulator started')
    } finally {
      server.close()
    }
  })
})

describe('serve --upstream: the engine', () => {
  let up: FakeUpstream
  beforeAll(async () => {
    const sglang = readFileSync(join(ROOT, 'test', 'fixtures', 'metrics', 'sglang.txt'), 'utf8')
    // the fake upstream's own /metrics are vLLM's: the SGLang text is served on another path
    up = await startUpstream((req, res) => {
      if (req.url === '/sglang/metrics') res.writeHead(200, { 'content-type': 'text/plain' }).end(sglang)
      else res.writeHead(404).end()
    })
  })
  afterAll(() => up.close())

  const serve = (...extra: string[]) =>
    runCli([
      'serve',
      '--upstream',
      up.url.replace('http://', 'http://user:secret@'),
      '--port',
      '0',
      '--admin-port',
      '0',
      ...LOCAL,
      '--set',
      'backends.pools[0].metrics_path=/sglang/metrics',
      ...extra,
    ])

  it('logs the pools at startup, and once per endpoint that its metrics look like another engine', async () => {
    const p = serve()
    try {
      const startup = await p.waitForLog((l) => Array.isArray(l.pools))
      expect(startup.pools).toEqual([
        { name: 'default', engine: 'vllm', models: ['*'], endpoints: ['default-0'] },
      ])
      expect(startup.simulator).toBe(false)
      expect(startup.msg).toBe('pools: default (vllm, 1 endpoint: default-0, models: *); simulator off')
      // the embedded default config serves keyless requests as 'demo', and says so once
      const anon = await p.waitForLog((l) => l.anonymousTenant !== undefined)
      expect(anon.anonymousTenant).toBe('demo')
      expect(anon.msg).toMatch(
        /^anonymous access is on: requests without a known API key are served as tenant 'demo'/,
      )
      const hint = await p.waitForLog((l) => l.looksLike !== undefined)
      expect(hint.msg).toMatch(
        /^endpoint default-0: its \/sglang\/metrics look like sglang's, not vllm's; set engine: sglang/,
      )
      await sleep(600) // several more scrapes of the same text
      expect(p.stdout.split('\n').filter((l) => l.includes('"looksLike"'))).toHaveLength(1)
      expect(p.stdout.split('\n').filter((l) => l.includes('"anonymousTenant"'))).toHaveLength(1)
      expect(p.stdout).not.toContain('no tenants are configured')
      expect(p.stdout).not.toContain('secret')
    } finally {
      p.child.kill('SIGTERM')
      await p.exited
    }
  })

  it('says at startup that a config with no tenants and no auth.anonymous refuses every request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-no-tenants-'))
    const file = join(dir, 'gateway.yaml')
    writeFileSync(
      file,
      `server: { host: 127.0.0.1, port: 0, admin_port: 0, admin_host: 127.0.0.1 }\nbackends:\n  pools:\n    - { name: default, models: ['*'], endpoints: ['${up.url}'] }\n`,
    )
    const p = runCli(['serve', '--config', file])
    try {
      const warn = await p.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('no tenants'))
      expect(warn.level).toBe(40)
      expect(warn.msg).toMatch(/every request will be refused \(401\).*auth\.anonymous/)
      const listening = await p.waitForLog((l) => typeof l.port === 'number')
      const r = await request(`http://127.0.0.1:${listening.port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      })
      await r.body.dump()
      expect(r.statusCode).toBe(401) // what the warning said
    } finally {
      p.child.kill('SIGTERM')
      await p.exited
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('--engine sglang reads them: the pool is ready and no hint is logged', async () => {
    const p = serve('--engine', 'sglang')
    try {
      const startup = await p.waitForLog((l) => Array.isArray(l.pools))
      expect((startup.pools as { engine: string }[])[0]?.engine).toBe('sglang')
      const listening = await p.waitForLog((l) => typeof l.adminPort === 'number')
      let ready = 0
      for (let i = 0; i < 100 && ready !== 200; i++) {
        const r = await request(`http://127.0.0.1:${listening.adminPort}/readyz`)
        await r.body.dump()
        ready = r.statusCode
        if (ready !== 200) await sleep(50)
      }
      expect(ready).toBe(200)
      expect(p.stdout).not.toContain('"looksLike"')
    } finally {
      p.child.kill('SIGTERM')
      await p.exited
    }
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
      // The fake upstream sends a token every 100 ms, over the default 50 ms TPOT objective:
      // once the gateway has seen those gaps, its decode guard (rightly) holds and refuses new
      // streams, and requests that arrived late (a loaded CI machine) were refused. This test
      // is about the drain, so the objective is one that upstream meets.
      '--set',
      'classes.interactive.slo.tpot_ms=1000',
    ])
    // a failed expectation before the SIGTERM below must not leave the gateway running
    onTestFinished(() => {
      if (p.child.exitCode === null) p.child.kill('SIGKILL')
    })
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
