/**
 * First-token promises kept: an engine takes every prompt waiting for it into its next
 * step, so a prompt sent after a request and before that request's step began lengthens
 * it. The gate holds a prompt that would take an earlier request's first token past what
 * its client was told (its predicted TTFT, with slack) until that step begins; the
 * dispatcher runs then, and the held request's own prediction says it waits.
 */
import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import { PoolAdmission, Waiting } from '../../../src/admission/pool-admission.js'
import { PrefillLedger } from '../../../src/admission/prefill-ledger.js'
import type { AdmittedLease } from '../../../src/admission/waiting.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool, fakeBackends, gatesOnOneEndpoint } from './fake-pool.js'

function setup() {
  const { gates, clock, view } = gatesOnOneEndpoint()
  // a stream decoding there: its first token at 1,000 began the step in progress
  const stream = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
  gates.tokenFrom(view.name, stream, 1_000)
  gates.firstToken(view.name, 1_000, 100)
  return { gates, clock, view, stream }
}

describe('PrefillLedger.earliestPromise', () => {
  it('reads the earliest promise of the prompts sent since a time, of a priority or above', () => {
    const l = new PrefillLedger()
    l.add('e', 100, 0, undefined, 10, 50, 0) // before the step: not the next one's
    const b = l.add('e', 100, 0, undefined, 20, 90, 0)
    l.add('e', 100, 0, undefined, 21, 70, 1)
    l.add('e', 100, 0, undefined, 22) // nothing promised
    expect(l.earliestPromise('e', 15, 0)).toBe(90)
    expect(l.earliestPromise('e', 15, 1)).toBe(70)
    expect(l.earliestPromise('e', 5, 0)).toBe(50)
    b()
    expect(l.earliestPromise('e', 15, 0)).toBe(Number.POSITIVE_INFINITY)
    expect(l.earliestPromise('other', 0, 1)).toBe(Number.POSITIVE_INFINITY)
  })
})

describe('EndpointGates: first-token promises', () => {
  it('holds a prompt that would break an earlier one promise until that one step begins', () => {
    const { gates, clock, view, stream } = setup()
    let began = 0
    gates.onStepBegin = () => began++
    clock.advance(2)
    // sent at 1,002 into the next step (the one in progress began at 1,000): promised by 1,062
    gates.dispatched(view.name, 200, 40, undefined, 1_062, 'interactive')
    const open = (tokens: number, className = 'interactive', floor = false) =>
      gates.open(className, tokens + 100, tokens, { pastGuard: floor })(view)
    expect(open(200)).toBe(true) // a small one: that step still ends in time
    expect(open(2_000)).toBe(false) // 2,000 tokens more of prefill there would not
    expect(gates.reopenInMs(view, 'interactive', 2_100, 2_000, () => 0)).toBeGreaterThan(0)
    expect(open(2_000, 'interactive', true)).toBe(true) // a request served under its class's floor goes
    // the step in progress ends: the next, with that prompt in it, began; the prompt waits no more
    clock.advance(13)
    gates.tokenFrom(view.name, stream, clock.now())
    expect(began).toBe(1)
    expect(open(2_000)).toBe(true)
  })

  it('keeps the promises of classes of its priority or above, and none already broken', () => {
    const { gates, clock, view } = setup()
    clock.advance(2)
    const open = (tokens: number, className: string) => gates.open(className, tokens + 100, tokens)(view)
    // batch (priority 1) promised: interactive does not wait for it; batch does (1,500 tokens
    // stay within batch's share of the prefill budget: it is the promise that holds it)
    const uncount = gates.dispatched(view.name, 200, 40, undefined, 1_062, 'batch')
    expect(open(1_500, 'interactive')).toBe(true)
    expect(open(1_500, 'batch')).toBe(false)
    uncount()
    // a promise that the step misses anyway (by 1,030) holds nobody
    gates.dispatched(view.name, 200, 40, undefined, 1_030, 'interactive')
    expect(open(2_000, 'interactive')).toBe(true)
  })

  it('holds nothing where no step is known in progress (an idle engine begins one with the first prompt)', () => {
    const { gates, view } = gatesOnOneEndpoint()
    gates.dispatched(view.name, 200, 40, undefined, 1_001, 'interactive')
    expect(gates.open('interactive', 2_100, 2_000)(view)).toBe(true)
  })
})

describe('PoolAdmission: a request held for a promise', () => {
  const at = (totalMs: number) => ({ queueFeatures: undefined, queueMs: 0, serverMs: totalMs, totalMs })

  it('is predicted to wait, queued, and dispatched when the next step begins', async () => {
    const config = configSchema.parse({ admission: { max_prefill_tokens_per_endpoint: 8_000 } })
    const clock = new ManualClock(1_000)
    const pa = new PoolAdmission(new FakePool(), config.classes, config.admission, clock)
    const place = (prompt: number, predictedMs: number) => {
      const t = new Ticket(`r${prompt}`, 'POST', '/v1/chat/completions', clock.now())
      const w = new Waiting(t, 'interactive', prompt, prompt + 100, at(predictedMs))
      return { t, w, placed: pa.place(w, 'tenant', 1, clock.now() + 60_000) }
    }
    const first = place(100, 20)
    const firstLease = first.placed as AdmittedLease
    first.t.dispatchedAt = clock.now()
    clock.advance(10)
    first.t.firstTokenAt = clock.now()
    firstLease.prefilled() // a step ended at 1,010 and the next began; the stream decodes
    clock.advance(2)
    const a = place(300, 50) // sent at once at 1,012, promised by 1,012 + 50 x 1.3
    expect(a.placed).not.toBeInstanceOf(Waiting)
    // 6,000 tokens more would take a's first token hundreds of ms later: predicted queued
    const predicted = pa.predictor.predict('interactive', 6_000, 6_100).prediction
    expect(predicted.queueMs).toBeGreaterThan(0)
    expect(pa.predictor.predict('interactive', 50, 150).prediction.queueMs).toBe(0)
    const b = place(6_000, predicted.totalMs)
    expect(b.placed).toBe(b.w) // queued
    let dispatched = false
    void b.w.lease.then(() => {
      dispatched = true
    })
    await new Promise((r) => setImmediate(r))
    expect(dispatched).toBe(false)
    // the step in progress ends (the stream's token): the step with a's prompt began
    clock.advance(10)
    firstLease.tokenGap(first.t, 12, clock.now())
    await new Promise((r) => setImmediate(r))
    expect(dispatched).toBe(true)
    pa.close()
  })
})

describe('Admission: a request that would miss its objective held for a promise', () => {
  it('goes ahead of the promise rather than be refused, and is dispatched at once', () => {
    const config = configSchema.parse({ admission: { max_prefill_tokens_per_endpoint: 16_000 } })
    const pool = new FakePool('main', ['m'])
    const clock = new ManualClock(1_000)
    const admission = new Admission(config, fakeBackends(pool), clock)
    const pa = admission.poolAdmission(pool)
    const at = (totalMs: number) => ({ queueFeatures: undefined, queueMs: 0, serverMs: totalMs, totalMs })
    const place = (prompt: number, predictedMs: number) => {
      const t = new Ticket(`r${prompt}`, 'POST', '/v1/chat/completions', clock.now())
      return {
        t,
        placed: pa.place(new Waiting(t, 'interactive', prompt, prompt + 100, at(predictedMs)), 'x', 1, 1e9),
      }
    }
    const first = place(100, 20)
    first.t.dispatchedAt = clock.now()
    clock.advance(10)
    first.t.firstTokenAt = clock.now()
    ;(first.placed as AdmittedLease).prefilled() // a step began at 1,010; its stream decodes
    clock.advance(2)
    place(2_000, 150) // sent at once, promised by 1,012 + 150 x 1.3
    // a prompt the promise holds, whose wait for that step would take it past its budget
    // (450 ms), and that would be within it sent now
    const budget = pa.ttft.budget('interactive', 500)
    let prompt = 0
    for (let x = 1_000; x <= 14_000 && prompt === 0; x += 10) {
      const held = pa.predictor.predict('interactive', x, x + 100).prediction
      const over = pa.predictor.predict(
        'interactive',
        x,
        x + 100,
        undefined,
        undefined,
        undefined,
        false,
      ).prediction
      if (held.queueMs > 0 && held.totalMs > budget && over.totalMs <= budget) prompt = x
    }
    expect(prompt).toBeGreaterThan(0)
    const ticket = new Ticket('b', 'POST', '/v1/chat/completions', clock.now())
    ticket.model = 'm'
    ticket.generation = true
    ticket.promptTokens = prompt
    ticket.expectedOutputTokens = 16
    ticket.maxTokens = 16
    const body = { model: 'm', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }
    const d = admission.decide({ ticket, body, pool })
    expect(d.kind).toBe('admit')
    if (d.kind !== 'admit') return
    expect(d.prediction.overPromises).toBe(true)
    expect(d.prediction.totalMs).toBeLessThanOrEqual(budget)
    expect(ticket.degraded).toEqual([]) // not degraded: it went ahead of the promise instead
    const w = new Waiting(ticket, d.className, d.promptTokens, d.kvTokens, d.prediction, d.blocks)
    expect(pa.place(w, 'x', 1, d.deadline)).not.toBe(w) // dispatched at once, not queued
    pa.close()
  })
})
