/**
 * The probe listener (src/probe-thread.ts) on real sockets: /healthz and /readyz answer from
 * their own thread while the main thread is blocked (here: Atomics.wait, a loop that does not
 * turn at all), they fail with 503 `stalled` once the main loop has not turned for
 * `probe_stall_ms`, /readyz follows readiness and the drain, anything else is an
 * OpenAI-shaped 404, and a port in use is a ListenError naming the probe port.
 *
 * The probes are sent from a child process: a client on the blocked main thread could not
 * send. "Answered while blocked" is judged by the wall clock both processes share (the
 * answer's time against the end of the block), not by a latency bound.
 */
import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { configSchema } from '../../../src/config/schema.js'
import { checkPorts, ListenError } from '../../../src/listeners.js'
import { HEARTBEAT_MS, type ProbeThread, startProbeThread } from '../../../src/probe-thread.js'
import { sleep } from '../../helpers/upstream.js'

interface ChildProbe {
  status: number
  body: Record<string, unknown>
  /** Epoch ms when the answer arrived. */
  at: number
}

/** A child process that says "go" when it runs, waits `afterMs`, then GETs `url`. */
function probeFromChild(
  url: string,
  afterMs: number,
): { started: Promise<void>; answer: Promise<ChildProbe> } {
  const script = `
    process.stdout.write('go\\n')
    setTimeout(async () => {
      const r = await fetch(${JSON.stringify(url)}, { headers: { connection: 'close' } })
      const body = await r.json()
      process.stdout.write(JSON.stringify({ status: r.status, body, at: Date.now() }) + '\\n')
    }, ${afterMs})
  `
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  let go: () => void = () => {}
  const started = new Promise<void>((resolve) => {
    go = resolve
  })
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString()
    if (out.startsWith('go\n')) go()
  })
  const answer = new Promise<ChildProbe>((resolve, reject) => {
    child.once('exit', (code) => {
      const line = out.split('\n')[1]
      if (code === 0 && line) resolve(JSON.parse(line) as ChildProbe)
      else reject(new Error(`probe child exited ${code}: ${out}`))
    })
  })
  return { started, answer }
}

/** Blocks this thread (no timer, no I/O, no heartbeat) for `ms`; returns when it ended (epoch ms). */
function blockMainThread(ms: number): number {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
  return Date.now()
}

const state = { ready: true, draining: false }
const sources = { ready: () => state.ready, draining: () => state.draining, lagMs: () => 7 }
let thread: ProbeThread | undefined

afterEach(async () => {
  await thread?.close()
  thread = undefined
  state.ready = true
  state.draining = false
})

async function get(path: string, method = 'GET') {
  const r = await fetch(`http://127.0.0.1:${thread!.port}${path}`, { method })
  return { status: r.status, body: method === 'HEAD' ? undefined : await r.json(), headers: r.headers }
}

/** Polls until `path` answers with body status `what` (the heartbeat carries a change within HEARTBEAT_MS). */
async function until(path: string, what: string) {
  for (let i = 0; i < 50; i++) {
    const r = await get(path)
    if ((r.body as { status?: string }).status === what) return r
    await sleep(HEARTBEAT_MS)
  }
  throw new Error(`${path} never answered ${what}`)
}

describe('the probe listener (its own thread)', { timeout: 30_000 }, () => {
  it('answers /healthz while the main thread is blocked', async () => {
    thread = await startProbeThread({ host: '127.0.0.1', port: 0, stallMs: 10_000 }, sources)
    const probe = probeFromChild(`http://127.0.0.1:${thread.port}/healthz`, 300)
    await probe.started
    const blockEnded = blockMainThread(1_500)
    const { status, body, at } = await probe.answer
    expect(status).toBe(200)
    expect(body.status).toBe('ok')
    expect(at).toBeLessThan(blockEnded)
    // it saw the main loop stand still
    expect(body.main_loop_heartbeat_age_ms).toBeGreaterThanOrEqual(200)
    expect(body.event_loop_lag_ms).toBe(7)
  })

  it('fails both probes with 503 stalled when the main loop has not turned for probe_stall_ms', async () => {
    thread = await startProbeThread({ host: '127.0.0.1', port: 0, stallMs: 300 }, sources)
    const health = probeFromChild(`http://127.0.0.1:${thread.port}/healthz`, 800)
    const ready = probeFromChild(`http://127.0.0.1:${thread.port}/readyz`, 800)
    await Promise.all([health.started, ready.started])
    const blockEnded = blockMainThread(2_000)
    for (const p of [await health.answer, await ready.answer]) {
      expect(p.at).toBeLessThan(blockEnded)
      expect(p.status).toBe(503)
      expect(p.body.status).toBe('stalled')
      expect(p.body.main_loop_heartbeat_age_ms).toBeGreaterThan(300)
    }
    // the loop turns again: healthy at the next heartbeat
    expect((await until('/healthz', 'ok')).status).toBe(200)
  })

  it('/readyz follows readiness and the drain; HEAD works; anything else is a 404', async () => {
    thread = await startProbeThread({ host: '127.0.0.1', port: 0, stallMs: 10_000 }, sources)
    expect((await get('/readyz')).body).toMatchObject({ status: 'ready' })
    state.ready = false
    const notReady = await until('/readyz', 'not ready')
    expect(notReady.status).toBe(503)
    expect(notReady.body).toMatchObject({ reason: 'no backend has fresh load data' })
    expect((await get('/healthz')).status).toBe(200)
    state.draining = true
    expect((await until('/readyz', 'draining')).status).toBe(503)
    state.draining = false
    state.ready = true
    expect((await until('/readyz', 'ready')).status).toBe(200)
    const head = await get('/healthz', 'HEAD')
    expect(head.status).toBe(200)
    expect(head.headers.get('content-type')).toMatch(/application\/json/)
    for (const [path, method] of [
      ['/metrics', 'GET'],
      ['/healthz', 'POST'],
      ['/', 'GET'],
    ] as const) {
      const r = await get(path, method)
      expect(r.status).toBe(404)
      expect(r.headers.get('x-should-retry')).toBe('false')
      expect(r.body).toEqual({
        error: {
          message: `No route for ${method} ${path}.`,
          type: 'not_found_error',
          code: 'GW_ERR_ROUTE_NOT_FOUND',
          param: null,
        },
      })
    }
  })

  it('closes: the port is released', async () => {
    const t = await startProbeThread({ host: '127.0.0.1', port: 0, stallMs: 10_000 }, sources)
    const port = t.port
    await t.close()
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow()
    // and can be listened on again
    thread = await startProbeThread({ host: '127.0.0.1', port, stallMs: 10_000 }, sources)
    expect((await get('/healthz')).status).toBe(200)
  })

  it('a probe port in use: the listen error has its code, and checkPorts names the probe port', async () => {
    const holder: Server = createServer()
    await new Promise<void>((r) => holder.listen({ host: '127.0.0.1', port: 0 }, r))
    const port = (holder.address() as { port: number }).port
    try {
      await expect(
        startProbeThread({ host: '127.0.0.1', port, stallMs: 10_000 }, sources),
      ).rejects.toMatchObject({ code: 'EADDRINUSE' })
      const { server } = configSchema.parse({
        server: { port: 0, admin_port: 0, admin_host: '127.0.0.1', probe_port: port },
      })
      const err = await checkPorts(server).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ListenError)
      expect((err as Error).message).toBe(`probe port ${port} is in use: use --set server.probe_port=N`)
    } finally {
      holder.close()
    }
  })

  it('the config refuses a probe port equal to another port', () => {
    expect(() => configSchema.parse({ server: { port: 8080, admin_port: 9464, probe_port: 9464 } })).toThrow(
      /probe_port.*must differ from server\.admin_port \(9464\)/s,
    )
  })
})
