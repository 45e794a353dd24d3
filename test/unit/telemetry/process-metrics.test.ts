import { createServer, connect as netConnect, type Server, type Socket } from 'node:net'
import { Registry } from 'prom-client'
import { afterEach, describe, expect, it } from 'vitest'
import { parsePromText } from '../../../src/backends/prom-text.js'
import { collectProcessMetrics } from '../../../src/telemetry/process-metrics.js'

let server: Server | undefined
const sockets: Socket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  const open = server
  server = undefined
  if (open !== undefined) await new Promise((r) => open.close(r))
})

async function scrape(registry: Registry) {
  const { samples } = parsePromText(await registry.metrics())
  const value = (name: string, type?: string) =>
    samples.get(name)?.find((s) => type === undefined || s.labels.type === type)?.value
  return { samples, value }
}

describe("Node's process metrics on /metrics", () => {
  it('counts active resources by type in one pass, with totals that match what is open', async () => {
    server = createServer(() => {})
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r))
    const port = (server.address() as { port: number }).port
    for (let i = 0; i < 20; i++) sockets.push(await connect(port))
    const registry = new Registry()
    collectProcessMetrics(registry)

    const { samples, value } = await scrape(registry)
    // 20 client sockets here and the 20 the server accepted, and the listener
    expect(value('nodejs_active_resources', 'TCPSocketWrap')).toBeGreaterThanOrEqual(40)
    expect(value('nodejs_active_resources', 'TCPServerWrap')).toBeGreaterThanOrEqual(1)
    const byType = (samples.get('nodejs_active_resources') ?? []).reduce((a, s) => a + s.value, 0)
    expect(value('nodejs_active_resources_total')).toBe(byType)
    expect(value('nodejs_active_handles_total')).toBeGreaterThanOrEqual(41)
    expect(value('nodejs_active_requests_total')).toBeGreaterThanOrEqual(0)
    // read off the event loop, and counting the sockets (Linux only, as prom-client's)
    if (process.platform === 'linux') expect(value('process_open_fds')).toBeGreaterThanOrEqual(41)
    // the per-type lists of handles and requests are not rendered
    expect(samples.has('nodejs_active_handles')).toBe(false)
    expect(samples.has('nodejs_active_requests')).toBe(false)
    // prom-client's other defaults are
    for (const name of ['process_cpu_seconds_total', 'process_max_fds', 'nodejs_eventloop_lag_p99_seconds'])
      expect(samples.has(name), name).toBe(true)

    // a type that is gone is not left behind at its last count
    for (const s of sockets.splice(0)) s.destroy()
    const open = server
    server = undefined
    await new Promise((r) => open.close(r))
    await new Promise((r) => setTimeout(r, 20))
    const after = await scrape(registry)
    expect(after.value('nodejs_active_resources', 'TCPServerWrap')).toBeUndefined()
    expect(after.value('nodejs_active_resources_total')).toBeLessThan(byType - 20)
  })
})

function connect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = netConnect(port, '127.0.0.1', () => resolve(s))
    s.once('error', reject)
  })
}
