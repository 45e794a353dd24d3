/**
 * When the drain's grace period is over, what is still open is ended by the gateway,
 * not cut: a stream gets the documented final error event (GW_ERR_DRAINING), a queued
 * request a 503 GW_ERR_DRAINING; the outcome says so (failed / rejected, not cancelled),
 * and the upstream request is aborted.
 */
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AdmissionGateway, startAdmissionGateway } from '../../helpers/admission-gateway.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream } from '../../helpers/upstream.js'
import { until } from '../backends/wait.js'

let up: FakeUpstream
let gw: AdmissionGateway

beforeAll(async () => {
  // streams forever, a chunk every 20 ms
  up = await startUpstream(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    while (!res.destroyed) {
      res.write(chunkEvent('x'))
      await sleep(20)
    }
  })
  // one request at the endpoint at a time: the second one queues
  gw = await startAdmissionGateway({
    endpoints: [up.url],
    raw: { admission: { max_inflight_per_endpoint: 1 }, classes: { batch: { slo: { e2e_ms: 600_000 } } } },
  })
})

afterAll(async () => {
  await gw.close()
  await up.close()
})

const stream = (cls: string) =>
  request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-priority': cls },
    body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  })

describe('the end of the grace period', () => {
  it('ends a stream with the GW_ERR_DRAINING event and refuses what is queued', async () => {
    const running = await stream('batch')
    expect(running.statusCode).toBe(200)
    const body = running.body.text()
    await until(() => gw.tickets.length === 0 && gw.apps.pipeline.inFlight === 1, 2000, 'one stream running')
    const queuedReply = stream('batch')
    await until(() => gw.apps.pipeline.inFlight === 2, 2000, 'one request queued')
    await sleep(100) // a few chunks relayed
    gw.apps.drain()
    await gw.apps.pipeline.stopAll()

    const text = await body
    const events = text.split('\n\n').filter(Boolean)
    expect(events.length).toBeGreaterThan(2)
    const last = JSON.parse(events.at(-1)!.slice('data: '.length)) as { error: { code: string } }
    expect(last.error.code).toBe('GW_ERR_DRAINING')
    const queued = await queuedReply
    expect(queued.statusCode).toBe(503)
    expect(((await queued.body.json()) as { error: { code: string } }).error.code).toBe('GW_ERR_DRAINING')

    await until(() => gw.tickets.length === 2, 2000, 'both accounted')
    const ends = gw.tickets.map((t) => ({ outcome: t.outcome, errorCode: t.errorCode, status: t.status }))
    expect(ends).toEqual(
      expect.arrayContaining([
        { outcome: 'failed', errorCode: 'GW_ERR_DRAINING', status: 200 }, // the stream, cut by the gateway
        { outcome: 'rejected', errorCode: 'GW_ERR_DRAINING', status: 503 }, // the queued one, refused
      ]),
    )
    expect(gw.apps.pipeline.inFlight).toBe(0)
    // the upstream request was aborted, not left streaming
    await until(() => up.seen.some((s) => s.abortedAt !== undefined), 2000, 'upstream aborted')
  })
})
