/**
 * A flood of small chat completions from a process of its own (bench/flood.ts runs one or
 * more, so the gateway's parsing is the bottleneck, not the bench's event loop): `connections`
 * keep-alive sockets, requests written open-loop at `rate` per second for `ms`, pipelined
 * (HTTP/1.1), round robin. A socket whose unsent bytes are over WRITE_CAP takes no more
 * until it drains (TCP says the gateway is not reading): those requests are counted as
 * `deferred` (offered, not sent), so the client's own memory stays bounded too. Responses
 * are counted from the byte stream (status lines and the reject reason header), each matched
 * to its request's write time on its socket (responses come in order) for the latency.
 * When the time is up, it waits `drainMs` for the answers still due, closes every socket and
 * prints one JSON line of counts.
 *
 *   node --import tsx bench/flood-client.ts URL MS CONNECTIONS RATE DRAIN_MS
 */
import { connect, type Socket } from 'node:net'

const [url = '', msArg = '10000', connArg = '100', rateArg = '1000', drainArg = '5000'] =
  process.argv.slice(2)
const { hostname, port } = new URL(url)
const MS = Number(msArg)
const CONNECTIONS = Number(connArg)
const RATE = Number(rateArg)
const DRAIN_MS = Number(drainArg)
const WRITE_CAP = 16 * 1024
const TICK_MS = 5

const body = JSON.stringify({
  model: 'meta-llama/Llama-3.1-8B-Instruct',
  max_tokens: 4,
  messages: [{ role: 'user', content: 'hi' }],
})
const REQUEST = Buffer.from(
  `POST /v1/chat/completions HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
)
const STATUS = Buffer.from('HTTP/1.1 ')
const REASON = Buffer.from('\r\nx-gateway-reject-reason: ')

interface Conn {
  socket: Socket
  /** Write times of the requests not answered yet, in order. */
  sent: number[]
  head: number
  tail: Buffer
  closedByServer: boolean
}

const counts: Record<string, number> = {}
const latencies: Record<string, number[]> = {}
let written = 0
let bytesIn = 0
let deferred = 0
let answered = 0
let stopping = false

function note(key: string, ms: number): void {
  counts[key] = (counts[key] ?? 0) + 1
  let l = latencies[key]
  if (l === undefined) {
    l = []
    latencies[key] = l
  }
  // a reservoir of the first 20,000 per kind is plenty for quantiles
  if (l.length < 20_000) l.push(ms)
}

/** Counts the responses whose status lines are in `chunk` (with the tail of the last one). */
function read(c: Conn, chunk: Buffer): void {
  bytesIn += chunk.length
  const buf = c.tail.length > 0 ? Buffer.concat([c.tail, chunk]) : chunk
  let at = buf.indexOf(STATUS)
  let last = 0
  while (at >= 0 && at + STATUS.length + 3 <= buf.length) {
    const end = buf.indexOf('\r\n\r\n', at)
    if (end < 0) break // the head is not all here yet
    const status = buf.toString('latin1', at + STATUS.length, at + STATUS.length + 3)
    const head = buf.subarray(at, end + 2)
    const r = head.indexOf(REASON)
    const reason = r < 0 ? '' : head.toString('latin1', r + REASON.length, head.indexOf('\r\n', r + 2))
    const t = c.sent[c.head++]
    answered++
    note(reason === '' ? status : `${status} ${reason}`, t === undefined ? 0 : performance.now() - t)
    last = end + 4
    at = buf.indexOf(STATUS, last)
  }
  // keep what may be the start of a head split over chunks
  const from = Math.max(last, buf.length - 512)
  c.tail = Buffer.from(buf.subarray(from))
  if (c.head > 4_096) {
    c.sent = c.sent.slice(c.head)
    c.head = 0
  }
}

function open(): Promise<Conn> {
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) })
    const c: Conn = { socket, sent: [], head: 0, tail: Buffer.alloc(0), closedByServer: false }
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => read(c, chunk))
    socket.on('end', () => {
      if (!stopping) c.closedByServer = true
    })
    socket.on('error', () => {
      if (!stopping) c.closedByServer = true
    })
    socket.once('connect', () => resolve(c))
  })
}

async function main(): Promise<void> {
  const conns: Conn[] = []
  for (let i = 0; i < CONNECTIONS; i += 100)
    conns.push(...(await Promise.all(Array.from({ length: Math.min(100, CONNECTIONS - i) }, open))))
  const t0 = performance.now()
  let offered = 0
  let next = 0
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const now = performance.now()
      if (now - t0 >= MS) {
        clearInterval(timer)
        resolve()
        return
      }
      const want = Math.floor(((now - t0) * RATE) / 1000) - offered
      for (let k = 0; k < want; k++) {
        offered++
        const c = conns[next++ % conns.length]!
        if (c.socket.destroyed || c.socket.writableLength > WRITE_CAP) {
          deferred++
          continue
        }
        c.sent.push(now)
        c.socket.write(REQUEST)
        written++
      }
    }, TICK_MS)
  })
  const floodMs = performance.now() - t0
  // the answers still due, for a while
  const until = performance.now() + DRAIN_MS
  while (answered < written && performance.now() < until) await new Promise((r) => setTimeout(r, 50))
  stopping = true
  const closedByServer = conns.filter((c) => c.closedByServer).length
  const silent = conns.filter((c) => c.head === 0 && c.sent.length > 0).length
  for (const c of conns) c.socket.destroy()
  const q = (l: number[], p: number) => {
    const s = [...l].sort((a, b) => a - b)
    return Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN)
  }
  const latency: Record<string, { p50: number; p99: number }> = {}
  for (const [k, l] of Object.entries(latencies)) latency[k] = { p50: q(l, 0.5), p99: q(l, 0.99) }
  process.stdout.write(
    `${JSON.stringify({ floodMs: Math.round(floodMs), offered, written, deferred, answered, counts, latency, closedByServer, silent, bytesIn })}\n`,
  )
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${String(err)}\n`)
    process.exit(1)
  },
)
