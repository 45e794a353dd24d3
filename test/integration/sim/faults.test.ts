import { afterEach, describe, expect, it } from 'vitest'
import { type SimHandle, startSim } from '../../../src/sim/index.js'
import { postJson, postStream, sleep, waitFor } from './helpers.js'

let sim: SimHandle | undefined
afterEach(async () => {
  await sim?.close()
  sim = undefined
})

async function start(faults = {}, timeScale = 1) {
  sim = await startSim({ profile: 'tiny', port: 0, faults, timeScale })
  return sim.replicas[0]?.url ?? ''
}

const req = { prompt: 'hello', max_tokens: 4, ignore_eos: true }
const setFaults = (url: string, body: unknown) =>
  fetch(`${url}/admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })

/** What a client sees when the connection dies: a rejected fetch with a socket-level cause. */
async function connectionError(p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (e) {
    const cause = (e as { cause?: { code?: string } }).cause
    return cause?.code ?? (e as Error).name
  }
  return 'no error'
}

describe('fault injection', () => {
  it('errorRate 1 with 503: every completion fails at once with a vLLM error body', async () => {
    const url = await start()
    expect((await setFaults(url, { errorRate: 1, errorStatus: 503 })).status).toBe(200)
    const r = await postJson(`${url}/v1/completions`, req)
    expect(r.status).toBe(503)
    expect(r.json.error).toMatchObject({ type: 'ServiceUnavailableError', code: 503 })
    await setFaults(url, { errorRate: 1 })
    expect((await postJson(`${url}/v1/completions`, req)).status).toBe(500)
    await setFaults(url, {})
    expect((await postJson(`${url}/v1/completions`, req)).status).toBe(200)
  })

  it('hang: the request is accepted and never answered; the client gives up at its own timeout', async () => {
    const url = await start({ hang: true })
    const t0 = performance.now()
    const err = await connectionError(
      fetch(`${url}/v1/completions`, {
        method: 'POST',
        body: JSON.stringify(req),
        signal: AbortSignal.timeout(300),
      }),
    )
    expect(err).toBe('TimeoutError')
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290)
    expect((await fetch(`${url}/health`)).status).toBe(200) // alive, just not answering completions
  })

  it('slowdown: every step takes that many times longer', async () => {
    const url = await start({}, 3) // scaled so HTTP overhead is small against the steps
    const engine = sim?.replicas[0]?.engine
    const timed = async () => {
      const r = await postStream(`${url}/v1/completions`, { ...req, max_tokens: 20, stream: true })
      return (r.events.at(-1)?.t ?? 0) - r.start
    }
    const normal = await timed()
    await setFaults(url, { slowdown: 4 })
    const slow = await timed()
    expect(slow / normal).toBeGreaterThan(2.5)
    expect(engine?.stats.generationTokens).toBe(40)
  })

  it('crash: in-flight and new connections are reset, the process (test runner) survives', async () => {
    const url = await start()
    const inflight = postStream(`${url}/v1/completions`, {
      prompt: 'x',
      max_tokens: 2000,
      ignore_eos: true,
      stream: true,
    })
    await sleep(50)
    expect((await setFaults(url, { crash: true })).status).toBe(200)
    const seen = await connectionError(inflight)
    expect(['UND_ERR_SOCKET', 'ECONNRESET', 'TypeError']).toContain(seen)
    expect(await connectionError(fetch(`${url}/health`))).toBe('ECONNREFUSED')
  })

  it('crashAfter N: N requests are served, the next one finds the connection closed', async () => {
    const url = await start({ crashAfter: 2 })
    expect((await postJson(`${url}/v1/completions`, req)).status).toBe(200)
    expect((await postJson(`${url}/v1/completions`, req)).status).toBe(200)
    const err = await connectionError(postJson(`${url}/v1/completions`, req))
    expect(['UND_ERR_SOCKET', 'ECONNRESET']).toContain(err)
    expect(await connectionError(fetch(`${url}/health`))).toBe('ECONNREFUSED')
  })

  it('metrics stale: values freeze; failing: /metrics answers 500', async () => {
    const url = await start()
    await postJson(`${url}/v1/completions`, req)
    await setFaults(url, { metrics: 'stale' })
    const frozen = await (await fetch(`${url}/metrics`)).text()
    await postJson(`${url}/v1/completions`, req)
    expect(await (await fetch(`${url}/metrics`)).text()).toBe(frozen)
    await setFaults(url, { metrics: 'failing' })
    expect((await fetch(`${url}/metrics`)).status).toBe(500)
    await setFaults(url, {})
    const live = await (await fetch(`${url}/metrics`)).text()
    expect(live).not.toBe(frozen)
  })

  it('startup delay: /health and completions answer 503 until ready', async () => {
    const url = await start({ startupDelayMs: 400 })
    expect((await fetch(`${url}/health`)).status).toBe(503)
    const r = await postJson(`${url}/v1/completions`, req)
    expect(r.status).toBe(503)
    expect(await waitFor(async () => (await fetch(`${url}/health`)).status === 200, 3000)).toBe(true)
    expect((await postJson(`${url}/v1/completions`, req)).status).toBe(200)
  })

  it('admin API: GET shows the faults, POST validates (400), DELETE clears', async () => {
    const url = await start({ slowdown: 2 })
    const get = (await (await fetch(`${url}/admin/faults`)).json()) as Record<string, unknown>
    expect(get.faults).toEqual({ slowdown: 2 })
    expect(get.ready).toBe(true)
    const bad = await setFaults(url, { errorRate: 5 })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain('errorRate')
    expect((await fetch(`${url}/admin/faults`, { method: 'POST', body: '{x' })).status).toBe(400)
    await fetch(`${url}/admin/faults`, { method: 'DELETE' })
    expect(((await (await fetch(`${url}/admin/faults`)).json()) as Record<string, unknown>).faults).toEqual(
      {},
    )
  })
})
