/**
 * A server slower than the TPOT objective at any batch size (100 ms a token, one stream or
 * twenty; a llama.cpp server on CPU, a large model on a small GPU): once the gateway has seen
 * one or two streams decode there, its decode guard lets go of the 50 ms objective it cannot
 * make the server hold, and requests are admitted on their predicted TTFT, which this server
 * meets. Before, the guard held each new stream until the running ones ended (the ITL never
 * fell under 45 ms), and most of these requests were refused after a predicted wait.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AdmissionGateway, startAdmissionGateway, streamChat } from '../../helpers/admission-gateway.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream } from '../../helpers/upstream.js'

const TOKENS = 12
const GAP_MS = 100

let up: FakeUpstream
let gw: AdmissionGateway
/** Streams running at the upstream now, and the most at once. */
let running = 0
let mostAtOnce = 0

beforeAll(async () => {
  up = await startUpstream(async (_req, res) => {
    mostAtOnce = Math.max(mostAtOnce, ++running)
    res.on('close', () => running--)
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    for (let i = 0; i < TOKENS; i++) {
      res.write(chunkEvent(`t${i} `))
      await sleep(GAP_MS)
    }
    res.end('data: [DONE]\n\n')
  })
  gw = await startAdmissionGateway({ endpoints: [up.url] })
})

afterAll(async () => {
  await gw.close()
  await up.close()
})

const stream = () => streamChat(gw.url)

const leastStep = () => gw.backends.pools()[0]?.endpoints()[0]?.facts?.leastStepMs()

describe('an engine slower than the TPOT objective at any batch size', () => {
  it('is learned from one stream, and then overlapping streams are admitted, not held one after another', async () => {
    const first = await stream()
    expect(first.status).toBe(200)
    expect(mostAtOnce).toBe(1)
    expect(leastStep()).toMatchObject({ source: 'measured' })
    expect(leastStep()?.value).toBeGreaterThan(80)

    // ten streams, 150 ms apart: up to nine running at once at the server
    const replies: Promise<Awaited<ReturnType<typeof stream>>>[] = []
    for (let i = 0; i < 10; i++) {
      replies.push(stream())
      await sleep(150)
    }
    const results = await Promise.all(replies)
    expect(results.map((r) => r.code ?? r.status)).toEqual(Array(10).fill(200))
    for (const r of results) expect(r.text).toContain(`t${TOKENS - 1} `)
    // they overlapped at the server (one after another, at most two would)
    expect(mostAtOnce).toBeGreaterThanOrEqual(5)
  })
})
