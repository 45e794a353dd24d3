import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import { noBackend } from '../../../src/admission/pass-through.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { errorHeaders } from '../../../src/errors.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool, fakeBackends, twoPoolAdmission } from './fake-pool.js'

function setup() {
  return twoPoolAdmission({
    classes: {
      strict: { priority: 0, slo: { ttft_ms: 500 }, max_kv_usage: 0.8, reject_on_ttft: true },
      interactive: {
        degrade: [
          { action: 'cap_max_tokens', max_tokens: 256 },
          { action: 'fallback_model', model: 's' },
          { action: 'single_choice' },
        ],
      },
    },
  })
}

function input(main: FakePool, extra: Record<string, unknown> = {}, priority?: string) {
  const ticket = new Ticket('t', 'POST', '/v1/chat/completions', 1000)
  ticket.model = 'm'
  ticket.generation = true
  ticket.requestedClass = priority
  if (typeof extra.max_tokens === 'number') ticket.maxTokens = extra.max_tokens
  ticket.expectedOutputTokens = ticket.maxTokens ?? 1024 // as parse sets it, with the default
  ticket.promptTokens = 100 + 4 // as parse estimates 400 chars and one message
  const body: Record<string, unknown> = {
    model: 'm',
    messages: [{ role: 'user', content: 'x'.repeat(400) }],
    ...extra,
  }
  return { ticket, body, pool: main }
}

describe('admission decision', () => {
  it('admits at once when the prediction is within the SLO, with no degradation', () => {
    const { admission, main } = setup()
    const i = input(main)
    const d = admission.decide(i)
    expect(d.kind).toBe('admit')
    expect(i.ticket.class).toBe('interactive')
    expect(i.ticket.degraded).toEqual([])
    expect(i.ticket.predictedTtftMs).toBeLessThan(450)
  })

  it('walks the ladder in order, re-predicting after each step, and stops at the first that fits', () => {
    const { admission, main } = setup()
    main.load = { ...main.load, waiting: 100 } // ~50k prefill tokens queued at the server
    const i = input(main, { max_tokens: 2048, n: 2 })
    const d = admission.decide(i)
    expect(d.kind).toBe('admit')
    // a TTFT miss only: cap_max_tokens cannot help it (the prompt is the same) and is
    // skipped, the request is left as it was asked; the fallback helps
    expect(i.ticket.degraded).toEqual(['fallback_model'])
    expect(i.body.max_tokens).toBe(2048)
    expect(i.body.model).toBe('s')
    expect(i.body.n).toBe(2) // single_choice was not needed
    expect(i.ticket.poolName).toBe('small')
    expect(i.ticket.servedModel).toBe('s')
    expect(i.ticket.predictedTtftMs).toBeLessThan(450)
    if (d.kind === 'admit') expect(d.poolAdmission.pool.name).toBe('small')
  })

  it('refuses with ttft_slo and an honest, capped Retry-After when no step is enough', () => {
    const { admission, main, small } = setup()
    main.load = { ...main.load, waiting: 100 }
    small.load = { ...small.load, waiting: 100 }
    const i = input(main)
    const d = admission.decide(i)
    expect(d.kind).toBe('reject')
    if (d.kind !== 'reject') return
    expect(d.error.code).toBe('GW_ERR_TTFT_SLO')
    expect(d.error.rejectReason).toBe('ttft_slo')
    expect(d.error.retryAfterMs).toBeGreaterThan(0)
    const h = errorHeaders(d.error)
    expect(Number(h['retry-after-ms'])).toBeLessThanOrEqual(60_000)
    expect(h['x-gateway-reject-reason']).toBe('ttft_slo')
    expect(i.ticket.predictedTtftMs).toBeGreaterThan(450)
  })

  it('says kv_exhausted when no endpoint has KV room for the request', () => {
    const { admission, main } = setup()
    main.load = { ...main.load, waiting: 100, running: 50, kvUsage: 0.79, kvCapacityTokens: 100_000 }
    const full = admission.decide(input(main, { max_tokens: 4096 }, 'strict'))
    expect(full.kind === 'reject' && full.error.rejectReason).toBe('kv_exhausted')
    // the same load, but a request small enough to fit: the queue is the problem
    const fits = admission.decide(input(main, { max_tokens: 16 }, 'strict'))
    expect(fits.kind === 'reject' && fits.error.rejectReason).toBe('ttft_slo')
  })

  it('never refuses batch for TTFT: it waits until its own deadline', () => {
    const { admission, main, config } = setup()
    main.load = { ...main.load, waiting: 1000 }
    const i = input(main, {}, 'batch')
    const d = admission.decide(i)
    expect(d.kind).toBe('admit')
    if (d.kind === 'admit') expect(d.deadline).toBe(1000 + (config.classes.batch?.max_queue_wait_ms ?? 0))
    expect(i.ticket.degraded).toEqual([])
  })

  it('answers no_backend at once when the pool has no usable endpoint', () => {
    const { admission, main } = setup()
    main.endpointsUp = 0
    const d = admission.decide(input(main))
    expect(d.kind === 'reject' && d.error.rejectReason).toBe('no_backend')
    // never sooner than the next scrape (the pool says 1 s here; a pool saying 0 gets the interval)
    expect(d.kind === 'reject' && d.error.retryAfterMs).toBeGreaterThanOrEqual(main.config.scrape_interval_ms)
  })

  it('refuses an unknown class with a 400', () => {
    const { admission, main } = setup()
    const d = admission.decide(input(main, {}, 'platinum'))
    expect(d.kind === 'reject' && d.error.status).toBe(400)
  })
})

describe('a request that cannot succeed by waiting', () => {
  it('is refused with ttft_unreachable and x-should-retry: false, and never let in as a probe', () => {
    const { admission, main, clock, config } = setup()
    clock.advance(config.admission.probe_interval_ms * 2) // a probe is due
    const i = input(main, {}, 'strict')
    i.ticket.promptTokens = 2_000_000 // its prefill alone takes longer than the 500 ms objective
    const d = admission.decide(i)
    expect(d.kind).toBe('reject')
    if (d.kind !== 'reject') return
    expect(d.error.code).toBe('GW_ERR_TTFT_UNREACHABLE')
    expect(errorHeaders(d.error)['x-should-retry']).toBe('false')
    expect(d.error.message).toContain('2000000 prompt tokens')
    // an ordinary request is still let in as the probe
    expect(admission.decide(input(main, {}, 'strict')).kind).toBe('admit')
  })

  it('an objective below the idle TTFT is said at startup and in /admin/state', () => {
    const config = configSchema.parse({
      classes: { interactive: { slo: { ttft_ms: 5 } } },
      admission: { estimator: { step_ms: 20 } },
      backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
    })
    const warnings: string[] = []
    const admission = new Admission(
      config,
      fakeBackends(new FakePool('main', ['m'])),
      new ManualClock(0),
      undefined,
      {
        warn: (_o, msg) => warnings.push(msg ?? ''),
      },
    )
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('interactive TTFT objective (5 ms) is below the least TTFT pool main')
    const state = admission.state() as { pools: { unreachableObjectives: { class: string }[] }[] }
    expect(state.pools[0]?.unreachableObjectives.map((u) => u.class)).toEqual(['interactive'])
  })
})

describe('no_backend', () => {
  it('never says retry at once, even when the pool reports an endpoint usable again', () => {
    const pool = new FakePool('main', ['m'])
    pool.retryAfterMs = () => 0
    const t = new Ticket('t', 'POST', '/v1/embeddings', 0)
    const err = noBackend(t, pool)
    expect(err.retryAfterMs).toBe(pool.config.scrape_interval_ms)
    const h = errorHeaders(err)
    expect(Number(h['retry-after-ms'])).toBeGreaterThan(0)
    expect(h['retry-after']).toBe(String(Math.ceil(Number(h['retry-after-ms']) / 1000)))
  })
})
