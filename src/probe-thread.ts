/**
 * The probe listener (`server.probe_port`): /healthz and /readyz served from a worker thread
 * of their own, so they answer while a flood keeps the main event loop seconds behind.
 *
 * On the admin listener the probes share the event loop with the traffic: under a flood far
 * above what the process can parse (bench:flood), a probe waited up to seconds for its turn,
 * a kubelet with a 1 s timeout would restart a gateway that was shedding load as designed, and
 * its load would move to the other replicas (a cascade). Here the main thread writes a
 * heartbeat and its readiness into shared memory every HEARTBEAT_MS; the worker answers from
 * them at once. It is still honest: a main loop that has not turned for `probe_stall_ms`
 * (wedged, not busy) fails both probes with 503 `stalled`, so a hung process is restarted.
 *
 * The worker's code is plain JavaScript evaluated from a string (node:http only): it runs the
 * same from src under tsx, from vitest and from dist, with no file to resolve.
 */
import { Worker } from 'node:worker_threads'
import { ERRORS } from './errors.js'

/** How often the main thread writes its heartbeat and readiness. */
export const HEARTBEAT_MS = 100

/** Shared cells (Float64): the heartbeat (epoch ms), ready (0/1), draining (0/1), lag (ms). */
const CELLS = 4

export interface ProbeSources {
  readonly ready: () => boolean
  readonly draining: () => boolean
  /** The main event loop's lag, ms (the overload guard's measure). */
  readonly lagMs: () => number
}

export interface ProbeOptions {
  readonly host: string
  readonly port: number
  /** A main loop whose heartbeat is older than this fails the probes (503 `stalled`). */
  readonly stallMs: number
}

export interface ProbeThread {
  /** The port it listens on (the given one, or the one the system chose for 0). */
  readonly port: number
  close(): Promise<void>
}

const WORKER = String.raw`
'use strict'
const { workerData, parentPort } = require('node:worker_threads')
const http = require('node:http')
const { host, port, stallMs, shared, notFound: nf } = workerData
const cells = new Float64Array(shared)
function send(res, status, body) {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  })
  res.end(res.req.method === 'HEAD' ? undefined : text)
}
// the gateway's own GW_ERR_ROUTE_NOT_FOUND (errors.ts), filled in here
function notFound(res, method, path) {
  if (!nf.retryable) res.setHeader('x-should-retry', 'false')
  const message = nf.message.replace('{method}', method).replace('{url}', path)
  send(res, nf.status, { error: { message, type: nf.type, code: nf.code, param: null } })
}
const server = http.createServer((req, res) => {
  const path = (req.url || '/').split('?')[0]
  const method = req.method || 'GET'
  if ((path !== '/healthz' && path !== '/readyz') || (method !== 'GET' && method !== 'HEAD'))
    return notFound(res, method, path)
  const age = Math.max(0, Math.round(Date.now() - cells[0]))
  const loop = { main_loop_heartbeat_age_ms: age, event_loop_lag_ms: Math.round(cells[3]) }
  if (age > stallMs) return send(res, 503, { status: 'stalled', ...loop })
  if (path === '/healthz') return send(res, 200, { status: 'ok', ...loop })
  if (cells[2] === 1) return send(res, 503, { status: 'draining', ...loop })
  if (cells[1] !== 1)
    return send(res, 503, { status: 'not ready', reason: 'no backend has fresh load data', ...loop })
  return send(res, 200, { status: 'ready', ...loop })
})
server.headersTimeout = 5000
server.requestTimeout = 10000
server.keepAliveTimeout = 5000
server.on('clientError', (err, socket) => {
  if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n')
  else socket.destroy()
})
server.once('error', (err) => parentPort.postMessage({ error: { code: err.code, message: err.message } }))
server.listen({ host, port }, () => parentPort.postMessage({ port: server.address().port }))
parentPort.on('message', (m) => {
  if (m !== 'close') return
  server.close(() => parentPort.postMessage({ closed: true }))
  server.closeAllConnections()
})
`

/** Starts the probe listener; rejects (with the listen error's code) when it cannot listen. */
export async function startProbeThread(opts: ProbeOptions, src: ProbeSources): Promise<ProbeThread> {
  const shared = new SharedArrayBuffer(CELLS * Float64Array.BYTES_PER_ELEMENT)
  const cells = new Float64Array(shared)
  const beat = () => {
    cells[0] = Date.now()
    cells[1] = src.ready() ? 1 : 0
    cells[2] = src.draining() ? 1 : 0
    cells[3] = src.lagMs()
  }
  beat()
  const heartbeat = setInterval(beat, HEARTBEAT_MS)
  heartbeat.unref()
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: {
      host: opts.host,
      port: opts.port,
      stallMs: opts.stallMs,
      shared,
      notFound: { ...ERRORS.GW_ERR_ROUTE_NOT_FOUND, code: 'GW_ERR_ROUTE_NOT_FOUND' },
    },
    // a thread that only answers probes: a small heap is plenty
    resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 4 },
  })
  // the probes never keep the process alive (close() ends the thread; exit ends it anyway)
  worker.unref()
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('error', reject)
    worker.once('message', (m: { port?: number; error?: { code?: string; message: string } }) => {
      if (m.port !== undefined) return resolve(m.port)
      const err = Object.assign(new Error(m.error?.message ?? 'the probe listener failed'), {
        code: m.error?.code,
      })
      reject(err)
    })
  }).catch(async (err: unknown) => {
    clearInterval(heartbeat)
    await worker.terminate()
    throw err
  })
  let closed: Promise<void> | undefined
  return {
    port,
    close: () => {
      closed ??= (async () => {
        clearInterval(heartbeat)
        const done = new Promise<void>((resolve) => {
          worker.once('message', () => resolve())
          worker.once('exit', () => resolve())
        })
        worker.postMessage('close')
        await Promise.race([done, new Promise((r) => setTimeout(r, 1_000).unref())])
        await worker.terminate()
      })()
      return closed
    },
  }
}
