/**
 * Scraping against a real HTTP server on port 0: freshness, failures, backoff, close().
 */
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Registry } from 'prom-client'
import { afterEach, describe, expect, it } from 'vitest'
import type { PoolEndpoint } from '../../../src/backends/endpoint.js'
import { type BackendsHandle, createBackends } from '../../../src/backends/index.js'
import { systemClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { sleep, until } from './wait.js'

const FIXTURE = readFileSync(new URL('../../fixtures/metrics/vllm-v1.txt', import.meta.url), 'utf8')

type Mode = 'ok' | 'error' | 'hang' | 'garbage'

interface MetricsServer {
  server: Server
  url: string
  mode: Mode
  hits: number
}

async function metricsServer(): Promise<MetricsServer> {
  const s: MetricsServer = { server: createServer(), url: '', mode: 'ok', hits: 0 }
  s.server.on('request', (req, res) => {
    s.hits++
    if (req.url !== '/metrics') return void res.writeHead(404).end()
    if (s.mode === 'hang') return // never answers
    if (s.mode === 'error') return void res.writeHead(500).end('boom')
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
    res.end(
      s.mode === 'garbage' ? '<html>upstream connect error</html>' : `${FIXTURE}vllm:hits_total ${s.hits}\n`,
    )
  })
  await new Promise<void>((r) => s.server.listen(0, '127.0.0.1', r))
  s.url = `http://127.0.0.1:${(s.server.address() as AddressInfo).port}`
  return s
}

let server: MetricsServer | undefined
let backends: BackendsHandle | undefined

afterEach(async () => {
  await backends?.close()
  server?.server.closeAllConnections()
  await new Promise((r) => server?.server.close(r))
  backends = undefined
  server = undefined
})

async function start(): Promise<{ ep: PoolEndpoint; registry: Registry }> {
  server = await metricsServer()
  const config = configSchema.parse({
    backends: {
      pools: [
        {
          name: 'p',
          models: ['*'],
          endpoints: [server.url],
          scrape_interval_ms: 20,
          scrape_timeout_ms: 100,
          stale_after_ms: 300,
        },
      ],
    },
  })
  const registry = new Registry()
  backends = createBackends(config, { clock: systemClock, registry })
  backends.start()
  const ep = backends.pools()[0]?.allEndpoints()[0] as PoolEndpoint
  return { ep, registry }
}

describe('scraping a real server', () => {
  it('reads the load, keeps it fresh, exports it', async () => {
    const { ep, registry } = await start()
    await until(() => ep.isFresh(), 2000, 'fresh load')
    expect(ep.load).toMatchObject({ waiting: 4, running: 20, kvUsage: 0.5 })
    expect(backends?.ready()).toBe(true)
    const text = await registry.metrics()
    expect(text).toContain('slo_gateway_backend_up{pool="p",backend="p-0"} 1')
    expect(text).toContain('slo_gateway_backend_waiting{pool="p",backend="p-0"} 4')
    expect(text).toContain('slo_gateway_backend_kv_usage_ratio{pool="p",backend="p-0"} 0.5')
    const age = Number(/slo_gateway_backend_scrape_age_seconds\{[^}]*\} (\S+)/.exec(text)?.[1])
    expect(age).toBeLessThan(0.3)
  })

  it('a 500 lets the data age out; scrapes back off while failing', async () => {
    const { ep } = await start()
    await until(() => ep.isFresh(), 2000, 'fresh load')
    const okRate = server!.hits
    await sleep(200)
    const perSecondOk = ((server!.hits - okRate) / 200) * 1000
    server!.mode = 'error'
    await until(() => !ep.up, 500, 'up = 0')
    await until(() => !ep.isFresh(), 1000, 'stale')
    const before = server!.hits
    await sleep(600)
    const perSecondFailing = ((server!.hits - before) / 600) * 1000
    expect(perSecondFailing).toBeLessThan(perSecondOk / 3) // 20 ms -> 40, 80, 160, 320... between tries
    server!.mode = 'ok'
    await until(() => ep.isFresh(), 3000, 'fresh again')
  })

  it('a hanging /metrics times out and goes stale; garbage is stale at once', async () => {
    const { ep } = await start()
    await until(() => ep.isFresh(), 2000, 'fresh load')
    server!.mode = 'hang'
    const t0 = performance.now()
    await until(() => !ep.isFresh(), 1500, 'stale')
    expect(performance.now() - t0).toBeGreaterThan(150) // it aged out, it was not dropped at once
    expect((ep.snapshot() as { scrape: { failure: string } }).scrape.failure).toBe('timeout')
    server!.mode = 'ok'
    await until(() => ep.isFresh(), 3000, 'fresh again')
    server!.mode = 'garbage'
    await until(() => !ep.isFresh(), 200, 'stale at once')
    expect((ep.snapshot() as { scrape: { failure: string } }).scrape.failure).toBe('unreadable')
  })

  it('a refused connection is stale at once', async () => {
    const { ep } = await start()
    await until(() => ep.isFresh(), 2000, 'fresh load')
    server!.server.closeAllConnections()
    server!.server.close()
    await until(() => !ep.isFresh(), 200, 'stale at once')
    expect((ep.snapshot() as { scrape: { failure: string } }).scrape.failure).toBe('connect')
  })

  it('close() stops scraping', async () => {
    const { ep } = await start()
    await until(() => ep.isFresh(), 2000, 'fresh load')
    await backends?.close()
    const hits = server!.hits
    await sleep(150)
    expect(server!.hits).toBe(hits)
  })
})
