/**
 * Through the gateway and the simulator: what admitted responses carry, and that every
 * counter (queues, in-flight per class, prefill ledger, backend ledger, requests in
 * flight) is back at zero after 1,000 requests aborted at random moments.
 */
import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SimGateway, startSimGateway } from '../../helpers/sim-gateway.js'
import { sleep } from '../../helpers/upstream.js'

interface PoolState {
  classes: Record<string, { queued: number; inflight: number }>
  prefillingTokens: Record<string, number>
}

describe('admission lifecycle through the gateway', () => {
  let gw: SimGateway
  const agent = new Agent({ connections: 256 })
  beforeAll(async () => {
    gw = await startSimGateway({
      scale: 2,
      profile: 'tiny',
      raw: { classes: { interactive: { slo: { ttft_ms: 2000, tpot_ms: 200 } } } },
    })
  })
  afterAll(async () => {
    await agent.close()
    await gw.close()
  })

  const body = (extra: object = {}) =>
    JSON.stringify({
      model: 'sim/tiny',
      stream: true,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hello there' }],
      ...extra,
    })

  it('tells the client its class, predicted TTFT, queue time and backend', async () => {
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', 'x-priority': 'batch' },
      body: body(),
    })
    const text = await res.body.text()
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-gateway-class']).toBe('batch')
    expect(Number(res.headers['x-gateway-predicted-ttft-ms'])).toBeGreaterThanOrEqual(0)
    expect(Number(res.headers['x-gateway-queue-ms'])).toBeGreaterThanOrEqual(0)
    expect(res.headers['x-gateway-backend']).toBe('sim-0')
    expect(text).toContain('data: [DONE]')
    expect(text).not.toContain('"usage"') // the gateway asked for usage; the client did not
    const flex = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: body({ service_tier: 'flex' }),
    })
    await flex.body.dump()
    expect(flex.headers['x-gateway-class']).toBe('batch')
    const unknown = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', 'x-priority': 'urgent' },
      body: body(),
    })
    expect(unknown.statusCode).toBe(400)
    expect(((await unknown.body.json()) as { error: { code: string } }).error.code).toBe(
      'GW_ERR_UNKNOWN_CLASS',
    )
  })

  it('returns every counter to zero after 1,000 requests aborted at random moments', async () => {
    let seed = 7
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    const outcomes: string[] = []
    const one = async (i: number) => {
      const ac = new AbortController()
      // one in five runs to its end, so the mix holds on a loaded machine too, where most
      // requests take longer than the 600 ms the others may wait
      const abortAfter = i % 5 === 4 ? undefined : rnd() * 600
      const timer = abortAfter === undefined ? undefined : setTimeout(() => ac.abort(), abortAfter)
      try {
        const res = await request(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          dispatcher: agent,
          signal: ac.signal,
          headers: { 'content-type': 'application/json', ...(i % 3 === 0 ? { 'x-priority': 'batch' } : {}) },
          body: body({ max_tokens: 8 + (i % 40) }),
        })
        await res.body.text()
        outcomes.push(String(res.statusCode))
      } catch {
        outcomes.push('aborted')
      } finally {
        clearTimeout(timer)
      }
    }
    // 1,000 requests, 100 at a time
    for (let b = 0; b < 10; b++) await Promise.all(Array.from({ length: 100 }, (_, k) => one(b * 100 + k)))
    expect(outcomes.filter((o) => o === 'aborted').length).toBeGreaterThan(100)
    expect(outcomes.filter((o) => o !== 'aborted').length).toBeGreaterThanOrEqual(200)
    expect(outcomes.filter((o) => o === '200').length).toBeGreaterThan(100)

    const g = gw.runtime.apps
    for (let i = 0; i < 100 && g.pipeline.inFlight > 0; i++) await sleep(20)
    expect(g.pipeline.inFlight).toBe(0)
    const st = await request(`${gw.adminUrl}/admin/state`, { dispatcher: agent })
    const state = (await st.body.json()) as {
      admission: { pools: PoolState[] }
      backends: { pools: { endpoints: { ledger: { requests: number; tokens: number } }[] }[] }
    }
    for (const pool of state.admission.pools) {
      for (const c of Object.values(pool.classes))
        expect(c).toEqual({ queued: 0, inflight: 0, oldestWaitMs: 0 })
      for (const t of Object.values(pool.prefillingTokens)) expect(t).toBe(0)
    }
    for (const pool of state.backends.pools) {
      for (const ep of pool.endpoints) expect(ep.ledger).toMatchObject({ requests: 0, tokens: 0 })
    }
  }, 120_000)
})
