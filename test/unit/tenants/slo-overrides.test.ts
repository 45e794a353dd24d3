/**
 * A tenant's SLO overrides reach each of its requests as the request's own objectives
 * (Ticket.slo): identify carries them, admission decides them with the class and admits
 * by them, the verdict and the wait for response headers read them.
 */
import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import type { StageDeps } from '../../../src/gateway-request.js'
import { objectivesOf } from '../../../src/objectives.js'
import { headersTimeoutMs } from '../../../src/proxy/forward.js'
import { verdictOf } from '../../../src/telemetry/verdict.js'
import { hashKey, TenantDirectory } from '../../../src/tenants/directory.js'
import { identifyStage } from '../../../src/tenants/identify.js'
import { Ticket } from '../../../src/ticket.js'
import { stageRequest } from '../../helpers/stage-request.js'
import { FakePool, fakeBackends } from '../admission/fake-pool.js'
import { ticket as finished } from '../telemetry/fixtures.js'

const KEYS = { plain: 'sk-plain', loose: 'sk-loose', mid: 'sk-mid', tight: 'sk-tight' } as const

/**
 * Class strict: TTFT 300 ms, tenants may set 50..2000 ms. A fixed margin of 0.5, so a
 * request is admitted when predicted <= half its own objective. The estimator's priors
 * (15 ms steps, 20k prefill tokens/s) predict ~222 ms for a 4,000-token prompt on an idle
 * endpoint (22.5 ms + 4000 x 0.05 ms).
 */
function setup() {
  const config = configSchema.parse({
    classes: {
      strict: {
        priority: 0,
        slo: { ttft_ms: 300, tpot_ms: 40 },
        max_kv_usage: 0.8,
        reject_on_ttft: true,
        tenant_slo_bounds: { ttft_ms: { min: 50, max: 2000 } },
      },
    },
    admission: { margin: 0.5, ttft_miss_target: 0 },
    backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
    tenants: [
      { id: 'plain', api_keys: [hashKey(KEYS.plain)] },
      { id: 'loose', api_keys: [hashKey(KEYS.loose)], slo: { strict: { ttft_ms: 1000 } } },
      { id: 'mid', api_keys: [hashKey(KEYS.mid)], slo: { strict: { ttft_ms: 400 } } },
      { id: 'tight', api_keys: [hashKey(KEYS.tight)], slo: { strict: { ttft_ms: 100 } } },
    ],
  })
  const tenants = TenantDirectory.fromConfig(config)
  const identify = identifyStage({ classes: config.classes, tenants } as unknown as StageDeps)
  const pool = new FakePool('main', ['m'])
  const clock = new ManualClock(1000)
  const admission = new Admission(config, fakeBackends(pool), clock)
  /** A 4,000-token request of class strict from the tenant of `key`, identified. */
  const request = (key: string) => {
    const r = stageRequest('/v1/chat/completions', { model: 'm' }, { authorization: `Bearer ${key}` })
    expect(identify(r)).toBeUndefined()
    const t = r.ticket
    t.model = 'm'
    t.generation = true
    t.requestedClass = 'strict'
    t.promptTokens = 4000
    t.expectedOutputTokens = 16
    return { ticket: t, body: { model: 'm', messages: [] }, pool }
  }
  return { config, tenants, admission, request }
}

describe('tenant SLO overrides: the request carries its own objectives', () => {
  it('identify hands on the merged objectives; a tenant without overrides carries none', () => {
    const { config, tenants, request } = setup()
    expect(request(KEYS.plain).ticket.tenantObjectives).toBeUndefined()
    const loose = request(KEYS.loose).ticket.tenantObjectives
    // the class's objectives with the override on top: TPOT stays the class's
    expect(loose).toEqual({ strict: { ttft_ms: 1000, tpot_ms: 40 } })
    expect(config.classes.strict?.slo).toEqual({ ttft_ms: 300, tpot_ms: 40 }) // not changed in place
    // built once per tenant, not per request
    expect(request(KEYS.loose).ticket.tenantObjectives).toBe(loose)
    expect(tenants.get('loose')?.objectives).toBe(loose)
  })

  it('admission decides them with the class, and admits by them', () => {
    const { config, admission, request } = setup()
    // predicted ~222 ms: over half of the class's 300 ms ...
    const plain = request(KEYS.plain)
    const refused = admission.decide(plain)
    expect(refused.kind === 'reject' && refused.error.rejectReason).toBe('ttft_slo')
    // ... and its objectives are the class's own object (no copy per request)
    expect(plain.ticket.slo).toBe(config.classes.strict?.slo)
    // within half of loose's 1000 ms: admitted, with a queue deadline from its own objective
    const loose = request(KEYS.loose)
    const admitted = admission.decide(loose)
    expect(admitted.kind).toBe('admit')
    expect(loose.ticket.slo).toEqual({ ttft_ms: 1000, tpot_ms: 40 })
    if (admitted.kind === 'admit') expect(admitted.deadline).toBeGreaterThan(1000 + 300)
    // 400 ms: over its budget (200 ms) though reachable on an idle server: ttft_slo
    const mid = admission.decide(request(KEYS.mid))
    expect(mid.kind === 'reject' && mid.error.rejectReason).toBe('ttft_slo')
    // 100 ms: below even the idle TTFT of this prompt: ttft_unreachable, naming its objective
    const tight = admission.decide(request(KEYS.tight))
    expect(tight.kind === 'reject' && tight.error.rejectReason).toBe('ttft_unreachable')
    expect(tight.kind === 'reject' && tight.error.message).toContain('objective (100 ms)')
  })

  it('the verdict and the wait for response headers read them', () => {
    const { config, admission, request } = setup()
    const loose = request(KEYS.loose)
    admission.decide(loose)
    // 600 ms to the first token: a miss for the class (300 ms), good for loose (1000 ms)
    const done = finished(0, { class: 'strict', ttft: 600, e2e: 660, chunks: 3 })
    expect(verdictOf(done, objectivesOf(done, config.classes))).toEqual({ kind: 'missed', missed: ['ttft'] })
    done.slo = loose.ticket.slo
    expect(verdictOf(done, objectivesOf(done, config.classes))).toEqual({ kind: 'good' })
    // a stream's headers: 2 x its TTFT objective
    loose.ticket.stream = true
    expect(headersTimeoutMs(loose.ticket, objectivesOf(loose.ticket, config.classes), 300_000)).toBe(2000)
  })

  it('a request admission did not judge is held to its class, with its tenant override', () => {
    const { config, request } = setup()
    const t = request(KEYS.loose).ticket
    t.class = 'strict' // as classify would have; admission off, or not a generation request
    expect(t.slo).toBeUndefined()
    expect(objectivesOf(t, config.classes)).toEqual({ ttft_ms: 1000, tpot_ms: 40 })
    const other = new Ticket('t', 'POST', '/v1/embeddings', 0)
    expect(objectivesOf(other, config.classes)).toBe(config.classes.interactive?.slo)
  })

  it('/admin/state lists each tenant with its overrides', () => {
    const { tenants } = setup()
    const state = tenants.state() as { tenants: { id: string; slo: unknown }[] }
    expect(state.tenants.map((t) => [t.id, t.slo])).toEqual([
      ['plain', {}],
      ['loose', { strict: { ttft_ms: 1000 } }],
      ['mid', { strict: { ttft_ms: 400 } }],
      ['tight', { strict: { ttft_ms: 100 } }],
    ])
    expect(JSON.stringify(state)).not.toContain(hashKey(KEYS.loose))
  })

  it('says at startup which tenant objective no request can meet', () => {
    const config = configSchema.parse({
      classes: { interactive: { tenant_slo_bounds: { ttft_ms: { min: 1, max: 1000 } } } },
      admission: { estimator: { step_ms: 20 } },
      backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
      tenants: [
        { id: 'fine', slo: { interactive: { ttft_ms: 200 } } },
        { id: 'hopeless', slo: { interactive: { ttft_ms: 5 } } },
      ],
    })
    const warnings: string[] = []
    new Admission(config, fakeBackends(new FakePool('main', ['m'])), new ManualClock(0), undefined, {
      warn: (_o, msg) => warnings.push(msg ?? ''),
    })
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain(
      "tenant hopeless's interactive TTFT objective (5 ms) is below the least TTFT",
    )
    expect(warnings[0]).toContain('tenants[1].slo.interactive.ttft_ms')
  })
})
