/**
 * One run of the admission bench against a real HTTP server (real sockets): interactive
 * requests are sent from the run's thread and batch ones from a worker thread
 * (admission-sender.ts), both on the run's clock, each on time, and every outcome comes back
 * to the segment it was sent in.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { runSegments, type Segment } from '../admission-run.js'
import type { Arrival } from '../admission-workload.js'

const STATS = { busyMs: 0, running: 0, waiting: 0, preemptions: 0, lagP50Ms: 0, lagP99Ms: 0, lagCount: 0 }

let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise((r) => server?.close(r))
  server = undefined
})

/** Streams `max_tokens` tokens 5 ms apart (counting the batch requests); any other path: the simulator's stats. */
async function serve(seen: { batch: number }): Promise<string> {
  server = createServer((req, res) => {
    if (req.url !== '/v1/chat/completions') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(STATS))
      return
    }
    if (req.headers['x-priority'] === 'batch') seen.batch++
    let body = ''
    req.on('data', (c: Buffer) => {
      body += c
    })
    req.on('end', async () => {
      const n = (JSON.parse(body) as { max_tokens: number }).max_tokens
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      for (let i = 0; i < n; i++) {
        res.write('data: {"choices":[{"index":0,"delta":{"content":"t"}}]}\n\n')
        await sleep(5)
      }
      res.end('data: [DONE]\n\n')
    })
  })
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const arrival = (cls: Arrival['cls'], seq: number, atMs: number): Arrival => ({
  seq,
  cls,
  atMs,
  promptTokens: 20,
  outputTokens: 4,
})

const segment = (name: string, arrivals: Arrival[]): Segment => ({
  name,
  measured: true,
  settleMs: 0,
  measureMs: 150,
  tailMs: 50,
  arrivals,
})

describe('a run of the admission bench (real sockets, batch from a worker thread)', () => {
  it('sends each class on time from its own thread and gives every outcome to its segment', async () => {
    const seen = { batch: 0 }
    const url = await serve(seen)
    const run = await runSegments({
      url,
      model: 'm',
      tag: 'test',
      scale: 1,
      segments: [
        segment('a', [
          arrival('interactive', 0, 10),
          arrival('batch', 0, 20),
          arrival('batch', 1, 60),
          arrival('interactive', 1, 100),
        ]),
        segment('b', [arrival('batch', 2, 30), arrival('interactive', 2, 40)]),
      ],
      probes: { simStatsUrl: url },
      log: () => {},
      label: 'test',
    })
    expect(seen.batch).toBe(3)
    expect(run.outcomes).toHaveLength(6)
    const key = (o: { arrival: Arrival }) => `${o.arrival.cls}${o.arrival.seq}`
    expect(run.segments.map((s) => s.outcomes.map(key).sort())).toEqual([
      ['batch0', 'batch1', 'interactive0', 'interactive1'],
      ['batch2', 'interactive2'],
    ])
    // due on the run's timeline (segment b starts at 200 ms), whichever thread sent it
    expect(run.outcomes.map((o) => o.dueMs).sort((x, y) => x - y)).toEqual([10, 20, 60, 100, 230, 240])
    for (const o of run.outcomes) {
      expect(o.status).toBe(200)
      expect(o.tokenMs).toHaveLength(4)
      // stamped on the run's clock in both threads: sent when due (a sender does not sleep
      // for the last millisecond, and a timer may fire a little early), its tokens after
      expect(o.sentMs).toBeGreaterThanOrEqual(o.dueMs - 2)
      expect(o.sentMs - o.dueMs).toBeLessThan(250)
      expect(o.tokenMs[0]).toBeGreaterThan(o.sentMs)
      expect(o.tokenMs[3]).toBeLessThan(run.wallMs)
    }
  })
})

/** Refuses each interactive request's first attempt with `retry-after-ms: waitMs`, admits the next. */
async function refuseOnce(waitMs: number): Promise<string> {
  const attempts = new Map<string, number>()
  server = createServer((req, res) => {
    if (req.url !== '/v1/chat/completions') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(STATS))
      return
    }
    let body = ''
    req.on('data', (c: Buffer) => {
      body += c
    })
    req.on('end', () => {
      const prompt = (JSON.parse(body) as { messages: { content: string }[] }).messages[0]?.content ?? ''
      const n = (attempts.get(prompt) ?? 0) + 1
      attempts.set(prompt, n)
      if (n === 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after-ms': String(waitMs) })
        res.end('{"error":{"message":"refused"}}')
        return
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end('data: {"choices":[{"index":0,"delta":{"content":"t"}}]}\n\ndata: [DONE]\n\n')
    })
  })
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const level = (arrivals: Arrival[]): Segment => ({
  name: 'level',
  measured: true,
  settleMs: 50,
  measureMs: 600,
  tailMs: 300,
  arrivals,
})

const run1 = (url: string, seg: Segment) =>
  runSegments({
    url,
    model: 'm',
    tag: 'retry',
    scale: 1,
    segments: [seg],
    probes: { simStatsUrl: url },
    log: () => {},
    label: 'test',
  })

describe('Retry-After measured at the client', () => {
  it('sends a refusal in the window again after its Retry-After, the next after half of it, spaced', async () => {
    const url = await refuseOnce(120)
    const run = await run1(
      url,
      level([
        arrival('interactive', 0, 10), // before the window: not sent again
        arrival('interactive', 1, 100), // in it: after its Retry-After
        arrival('interactive', 2, 150), // within RETRY_SPACING_MS of that retry: not sent again
        arrival('interactive', 3, 400), // after half of its Retry-After
      ]),
    )
    const seg = run.segments[0]!
    expect(seg.outcomes.filter((o) => o.status === 503)).toHaveLength(4)
    expect(seg.outcomes.every((o) => o.retryAfterMs === 120)).toBe(true)
    expect(seg.retries.map((r) => [r.arm, r.outcome.arrival.seq, r.outcome.status])).toEqual([
      ['at', 1, 200],
      ['half', 3, 200],
    ])
    for (const r of seg.retries) {
      const original = seg.outcomes.find((o) => o.arrival.seq === r.outcome.arrival.seq)!
      // the same request (the server admitted it as a second attempt), sent its wait after the refusal came back
      expect(r.outcome.arrival).toBe(original.arrival)
      expect(r.outcome.sentMs - (original.headersMs as number)).toBeGreaterThanOrEqual(
        (r.arm === 'at' ? 120 : 60) - 2,
      )
      expect(r.outcome.tokenMs).toHaveLength(1)
    }
    expect(seg.retryBeyondLevel).toBe(0)
  })

  it("does not send again a refusal whose wait runs past its level's end, in either arm; counts it", async () => {
    // the level ends 950 ms from its start: a wait of 700 ms fits from 100 ms, not from 400 ms,
    // though half of it would (both arms draw from the same refusals)
    const url = await refuseOnce(700)
    const run = await run1(url, level([arrival('interactive', 0, 100), arrival('interactive', 1, 400)]))
    const seg = run.segments[0]!
    expect(seg.outcomes.map((o) => o.status)).toEqual([503, 503])
    expect(seg.retries.map((r) => [r.arm, r.outcome.arrival.seq])).toEqual([['at', 0]])
    expect(seg.retryBeyondLevel).toBe(1)
  })
})
