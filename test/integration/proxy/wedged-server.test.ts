/**
 * A wedged server (accepts, never answers) does not hold an interactive client for the
 * 300 s headers ceiling: the wait is bounded by the class's objectives, and one such
 * timeout ejects the endpoint while the pool has another, healthy one.
 */
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AdmissionGateway, startAdmissionGateway } from '../../helpers/admission-gateway.js'
import { chunkEvent, type FakeUpstream, startUpstream } from '../../helpers/upstream.js'

let healthy: FakeUpstream
let wedged: FakeUpstream
let gw: AdmissionGateway

beforeAll(async () => {
  healthy = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.end(`${chunkEvent('hi', 'stop')}data: [DONE]\n\n`)
  })
  wedged = await startUpstream(() => {}) // never answers
  gw = await startAdmissionGateway({ endpoints: [wedged.url, healthy.url] })
})

afterAll(async () => {
  await gw.close()
  await healthy.close()
  await wedged.close()
})

const chat = async () => {
  const t0 = performance.now()
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  })
  await res.body.text()
  return { status: res.statusCode, backend: res.headers['x-gateway-backend'], ms: performance.now() - t0 }
}

describe('a wedged server', () => {
  it('answers 504 within twice the TTFT objective, then is ejected at once', async () => {
    const first: Awaited<ReturnType<typeof chat>>[] = []
    // the picker spreads idle endpoints: within a few requests one goes to the wedged one
    for (let i = 0; i < 6 && !first.some((r) => r.status === 504); i++) first.push(await chat())
    const timedOut = first.find((r) => r.status === 504)
    expect(timedOut, JSON.stringify(first)).toBeDefined()
    expect(timedOut!.backend).toBe('p-0')
    // interactive's TTFT objective is 500 ms: the wait is 1 s, not 300 s
    expect(timedOut!.ms).toBeLessThan(5_000)
    const after = await Promise.all(Array.from({ length: 8 }, () => chat()))
    expect(after.map((r) => r.status)).toEqual(Array(8).fill(200))
    expect(new Set(after.map((r) => r.backend))).toEqual(new Set(['p-1']))
    const ejected = (
      gw.backends.state() as { pools: { endpoints: { name: string; status: string }[] }[] }
    ).pools[0]?.endpoints.find((e) => e.name === 'p-0')
    expect(ejected?.status).toBe('ejected')
  }, 30_000)
})
