/**
 * A tenant's SLO override through a real gateway (admission on, real scrapes) and a
 * scripted upstream: the same request is refused for the tenant whose TTFT objective is
 * tighter than what is predicted (503 ttft_slo) and admitted for a tenant on the class's
 * own objective. No wall-clock assertions: the prediction comes from the estimator's
 * priors, and the two objectives sit far on either side of it.
 */
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../../src/tenants/directory.js'
import { type AdmissionGateway, startAdmissionGateway } from '../../helpers/admission-gateway.js'
import { type FakeUpstream, startUpstream } from '../../helpers/upstream.js'

const PLAIN = 'sk-plain-slo-test-0123456789'
const TIGHT = 'sk-tight-slo-test-0123456789'

let up: FakeUpstream
let gw: AdmissionGateway

beforeAll(async () => {
  up = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(
      JSON.stringify({
        id: 'c1',
        object: 'chat.completion',
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      }),
    )
  })
  gw = await startAdmissionGateway({
    endpoints: [up.url],
    raw: {
      auth: {},
      classes: {
        interactive: {
          degrade: [],
          tenant_slo_bounds: { ttft_ms: { min: 50, max: 2000 } },
        },
      },
      // Admit when predicted <= half the objective, a fixed margin, and no probes (which
      // would let a refused request in). The priors predict ~130 ms for the ~2,000-token
      // prompt below on an idle endpoint (1.5 x 20 ms + 2,000 / 20,000 tokens/s): within
      // half of the class's 500 ms, over half of tight's 200 ms (yet reachable: not
      // ttft_unreachable).
      admission: {
        margin: 0.5,
        ttft_miss_target: 0,
        probe_interval_ms: 600_000,
        estimator: { step_ms: 20, prefill_tokens_per_s: 20_000 },
      },
      tenants: [
        { id: 'plain', api_keys: [hashKey(PLAIN)] },
        { id: 'tight', api_keys: [hashKey(TIGHT)], slo: { interactive: { ttft_ms: 200 } } },
      ],
    },
  })
})

afterAll(async () => {
  await gw.close()
  await up.close()
})

function chat(key: string) {
  return request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({
      model: 'm',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'x'.repeat(8000) }],
    }),
  })
}

const generations = () => up.seen.filter((s) => s.url === '/v1/chat/completions')

describe('a tenant SLO override through the gateway', () => {
  it('refuses the tenant whose TTFT objective is tighter than predicted (503 ttft_slo)', async () => {
    // first, so that no finished request has refined the priors yet
    const res = await chat(TIGHT)
    const body = (await res.body.json()) as { error: { code: string; message: string } }
    expect(res.statusCode).toBe(503)
    expect(res.headers['x-gateway-reject-reason']).toBe('ttft_slo')
    expect(body.error.code).toBe('GW_ERR_TTFT_SLO')
    expect(generations()).toHaveLength(0)
    const t = gw.tickets.find((x) => x.tenant === 'tight')
    expect(t?.slo?.ttft_ms).toBe(200)
    expect(t?.predictedTtftMs).toBeGreaterThan(100)
    expect(t?.predictedTtftMs).toBeLessThan(250)
  })

  it('admits the same request for a tenant on the class objective', async () => {
    const res = await chat(PLAIN)
    await res.body.text()
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-gateway-class']).toBe('interactive')
    expect(generations()).toHaveLength(1)
    const t = gw.tickets.find((x) => x.tenant === 'plain')
    expect(t?.slo).toBe(gw.apps.config.classes.interactive?.slo)
  })
})
