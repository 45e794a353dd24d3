/**
 * An objective the servers cannot meet even idle: the official openai client, with its
 * default retries, makes one request and stops (x-should-retry: false), because waiting
 * cannot help; nothing reaches the server.
 */
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AdmissionGateway, startAdmissionGateway } from '../helpers/admission-gateway.js'
import { type FakeUpstream, startUpstream } from '../helpers/upstream.js'

let up: FakeUpstream
let gw: AdmissionGateway

beforeAll(async () => {
  up = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"choices":[]}')
  })
  gw = await startAdmissionGateway({
    endpoints: [up.url],
    // a 5 ms TTFT objective on servers whose engine step alone is 20 ms
    raw: { classes: { interactive: { slo: { ttft_ms: 5 } } }, admission: { estimator: { step_ms: 20 } } },
  })
})

afterAll(async () => {
  await gw.close()
  await up.close()
})

describe('an objective below the idle TTFT', () => {
  it('the openai client (default retries) makes one request and stops', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test' }) // maxRetries: 2
    const err = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OpenAI.APIError)
    const apiErr = err as InstanceType<typeof OpenAI.APIError>
    expect(apiErr.status).toBe(503)
    expect(apiErr.headers?.get('x-should-retry')).toBe('false')
    expect(apiErr.headers?.get('x-gateway-reject-reason')).toBe('ttft_unreachable')
    expect(apiErr.message).toContain('even on an idle server')
    expect(gw.tickets).toHaveLength(1) // no retry
    expect(up.seen.filter((s) => s.url !== '/metrics')).toHaveLength(0)
  })

  it('says so in /admin/state', () => {
    const state = gw.admission.state() as {
      pools: { unreachableObjectives: { class: string; sloMs: number }[] }[]
    }
    expect(state.pools[0]?.unreachableObjectives).toEqual([
      expect.objectContaining({ class: 'interactive', sloMs: 5 }),
    ])
  })
})
