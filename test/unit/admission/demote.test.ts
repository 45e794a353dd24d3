/**
 * The demote_to_batch degrade step: a request whose predicted TTFT misses its objective is
 * queued in the lower class instead of refused, only when its tenant or the request allows
 * it and the tenant may use that class; it comes after the steps before it in the ladder,
 * is re-predicted in the new class, and is reported as a degradation.
 */
import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool, fakeBackends } from './fake-pool.js'

/** TTFT 150 ms and a margin of 0.5: a 4,000-token prompt (~222 ms idle) is over budget. */
function setup() {
  const config = configSchema.parse({
    classes: {
      interactive: {
        priority: 0,
        slo: { ttft_ms: 300, tpot_ms: 50 },
        max_kv_usage: 0.8,
        reject_on_ttft: true,
        degrade: [{ action: 'cap_max_tokens', max_tokens: 64 }, { action: 'demote_to_batch' }],
      },
    },
    admission: { margin: 0.5, ttft_miss_target: 0 },
    backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
  })
  const pool = new FakePool('main', ['m'])
  const admission = new Admission(config, fakeBackends(pool), new ManualClock(1000))
  const request = (opts: { demotable: boolean; allowed?: string[] }) => {
    const t = new Ticket('t', 'POST', '/v1/chat/completions', 1000)
    t.model = 'm'
    t.generation = true
    t.requestedClass = 'interactive'
    t.promptTokens = 4000
    t.expectedOutputTokens = 500
    t.demotable = opts.demotable
    if (opts.allowed !== undefined) t.tenantAllowedClasses = new Set(opts.allowed)
    return { ticket: t, body: { model: 'm', messages: [], max_tokens: 500 } as Record<string, unknown>, pool }
  }
  return { admission, request }
}

describe('demote_to_batch', () => {
  it('queues an allowed request as batch, after the steps before it, instead of refusing it', () => {
    const { admission, request } = setup()
    const r = request({ demotable: true })
    const d = admission.decide(r)
    expect(d.kind).toBe('admit')
    if (d.kind === 'admit') expect(d.className).toBe('batch')
    expect(r.ticket.class).toBe('batch')
    // cap_max_tokens comes first but cannot help a TTFT miss (it does not change TTFT): skipped
    expect(r.ticket.degraded).toEqual(['demote_to_batch'])
    expect(r.body.max_tokens).toBe(500)
    // judged by batch's objectives now, and re-predicted there
    expect(r.ticket.slo).toEqual({ e2e_ms: 30 * 60_000 })
    expect(r.ticket.predictedTtftMs).toBeGreaterThan(150)
  })

  it('refuses as before a request neither its tenant nor itself allows to be demoted', () => {
    const { admission, request } = setup()
    const r = request({ demotable: false })
    const d = admission.decide(r)
    expect(d.kind === 'reject' && d.error.rejectReason).toBe('ttft_slo')
    expect(r.ticket.class).toBe('interactive')
    expect(r.ticket.degraded).toEqual([])
  })

  it('does not demote into a class the tenant may not use', () => {
    const { admission, request } = setup()
    const d = admission.decide(request({ demotable: true, allowed: ['interactive'] }))
    expect(d.kind === 'reject' && d.error.rejectReason).toBe('ttft_slo')
  })

  it('a config naming an unknown class to demote to is refused', () => {
    expect(() =>
      configSchema.parse({
        classes: {
          interactive: {
            priority: 0,
            slo: { ttft_ms: 300 },
            max_kv_usage: 0.8,
            reject_on_ttft: true,
            degrade: [{ action: 'demote_to_batch', class: 'bulk' }],
          },
        },
      }),
    ).toThrow(/unknown class 'bulk' to demote to/)
  })
})
