/**
 * Resource bounds of the queues: a class's queue holds at most `queue_limit` requests and
 * `queue_limit_bytes` of bodies per pool; an arrival beyond either is refused with 503
 * `queue_full` at once (while every request ahead of it is still waiting: nothing has
 * been answered yet), and once the server answers, everything queued is served and the
 * queues, leases and ledger are empty again.
 */
import type { ServerResponse } from 'node:http'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { type AdmissionGateway, startAdmissionGateway } from '../../helpers/admission-gateway.js'
import { residue } from '../../helpers/residue.js'
import { type FakeUpstream, sleep, startUpstream } from '../../helpers/upstream.js'

const answer = (res: ServerResponse) => {
  res.setHeader('content-type', 'application/json')
  res.end(JSON.stringify({ id: 'c', choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } }))
}

describe('queue limits in count and bytes', { timeout: 60_000 }, () => {
  let up: FakeUpstream
  let gw: AdmissionGateway
  const agent = new Agent({ connections: 256 })
  afterEach(async () => {
    await gw?.close()
    await up?.close()
  })

  /** A gateway whose one endpoint takes one request at a time and holds it until released. */
  async function start(batch: Record<string, unknown>) {
    const held: ServerResponse[] = []
    up = await startUpstream((_req, res) => {
      held.push(res)
    })
    gw = await startAdmissionGateway({
      endpoints: [up.url],
      raw: {
        admission: { max_inflight_per_endpoint: 1 },
        classes: { batch: { ...batch } },
      },
    })
    return {
      held,
      release: () => {
        for (const r of held.splice(0)) answer(r)
      },
    }
  }

  const send = (bytes = 0) =>
    request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', 'x-priority': 'batch' },
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: `hi${'.'.repeat(bytes)}` }],
        max_tokens: 2,
      }),
    }).then(async (r) => ({
      status: r.statusCode,
      reason: r.headers['x-gateway-reject-reason'],
      body: await r.body.text(),
    }))

  const state = async () =>
    JSON.parse((await gw.apps.admin.inject({ method: 'GET', url: '/admin/state' })).body) as unknown

  const queued = async () => {
    const s = (await state()) as { admission: { pools: { classes: { batch: { queued: number } } }[] } }
    return s.admission.pools[0]?.classes.batch.queued ?? 0
  }

  async function until(f: () => Promise<boolean>) {
    for (let i = 0; i < 300 && !(await f()); i++) await sleep(20)
  }

  it('refuses the arrival beyond queue_limit with 503 queue_full while all ahead still wait', async () => {
    const { held, release } = await start({ queue_limit: 5 })
    const first = send()
    await until(async () => held.length === 1)
    const waiting = Array.from({ length: 5 }, () => send())
    await until(async () => (await queued()) === 5)
    expect(await queued()).toBe(5)
    const over = await Promise.all(Array.from({ length: 3 }, () => send()))
    for (const o of over) {
      expect(o.status).toBe(503)
      expect(o.reason).toBe('queue_full')
      expect(JSON.parse(o.body).error.code).toBe('GW_ERR_QUEUE_FULL')
    }
    // refused at once: the server has not answered anything yet, and the queue is as it was
    expect(held.length).toBe(1)
    expect(await queued()).toBe(5)
    const drain = setInterval(release, 20)
    const served = await Promise.all([first, ...waiting])
    clearInterval(drain)
    expect(served.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
    await until(async () => residue(await state()).length === 0)
    expect(residue(await state())).toEqual([])
  })

  it('refuses the arrival beyond queue_limit_bytes, counting the bodies queued', async () => {
    const { held, release } = await start({ queue_limit: 1000, queue_limit_bytes: 3_500 })
    const first = send(1_000)
    await until(async () => held.length === 1)
    // ~1,100 bytes each: three fit in 3,500, the fourth does not
    const waiting = Array.from({ length: 3 }, () => send(1_000))
    await until(async () => (await queued()) === 3)
    const over = await send(1_000)
    expect(over.status).toBe(503)
    expect(over.reason).toBe('queue_full')
    // a small one still fits in what is left
    const small = send(0)
    await until(async () => (await queued()) === 4)
    expect(await queued()).toBe(4)
    const drain = setInterval(release, 20)
    const served = await Promise.all([first, ...waiting, small])
    clearInterval(drain)
    expect(served.every((r) => r.status === 200)).toBe(true)
    await until(async () => residue(await state()).length === 0)
    expect(residue(await state())).toEqual([])
  })
})
