/**
 * Length-aware TTFT objectives (classes.<name>.slo.ttft_ms_per_1k_prompt_tokens): a
 * request's TTFT objective grows with its prompt, so admission judges a long prompt by
 * what its length allows instead of refusing it for being long; the allowance pays for the
 * prompt's own prefill and the wait its length adds, not the wait every length shares; the
 * verdict reads the whole objective; a class without the allowance keeps one shared
 * objective object.
 */
import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import type { Queued } from '../../../src/admission/face.js'
import { TtftObjectives } from '../../../src/admission/ttft-objectives.js'
import type { Lease } from '../../../src/backends/types.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { lengthAwareTtftMs, objectivesOf } from '../../../src/objectives.js'
import { verdictOf } from '../../../src/telemetry/verdict.js'
import { Ticket } from '../../../src/ticket.js'
import { ticket as finished } from '../telemetry/fixtures.js'
import { FakePool, fakeBackends, twoPoolAdmission } from './fake-pool.js'

/**
 * Margin 0.5: admitted when predicted <= half the request's objective. The estimator's
 * priors predict about 22.5 ms + 0.05 ms per prompt token on an idle endpoint (~222 ms for
 * 4,000 tokens, ~32 ms for 200).
 */
function setup(per1k: number | undefined) {
  const config = configSchema.parse({
    classes: {
      chat: {
        priority: 0,
        slo: {
          ttft_ms: 150,
          tpot_ms: 50,
          ...(per1k === undefined ? {} : { ttft_ms_per_1k_prompt_tokens: per1k }),
        },
        max_kv_usage: 0.8,
        reject_on_ttft: true,
      },
    },
    admission: { margin: 0.5, ttft_miss_target: 0 },
    backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
  })
  const pool = new FakePool('main', ['m'])
  const clock = new ManualClock(1000)
  const admission = new Admission(config, fakeBackends(pool), clock)
  const request = (promptTokens: number) => chatRequest(pool, promptTokens, clock.now())
  return { config, admission, request, clock }
}

/**
 * 400 ms per 1k prompt tokens, a pool of one slot: a 100-token prompt running and `n` of
 * `promptTokens` admitted behind it (`admitted`: what admit gave each), then 10 ms pass (what
 * arrives next arrived after them, as it does: a prompt arriving with them would be queued by
 * its deadline among them).
 */
function queuedBehindOne(n: number, promptTokens = 100) {
  const aware = setup(400)
  const pool = aware.request(0).pool as FakePool
  pool.slots = 1
  const body = { model: 'm', messages: [] }
  expect(aware.admission.admit(aware.request(100).ticket, body, pool)).toHaveProperty('release')
  const admitted = Array.from({ length: n }, () =>
    aware.admission.admit(aware.request(promptTokens).ticket, body, pool),
  )
  aware.clock.advance(10)
  return { aware, pool, admitted }
}

/** A request of class `chat` for model `m`, of `promptTokens` and 16 output tokens, as parse leaves it. */
function chatRequest(pool: FakePool, promptTokens: number, arrivedAt = 1000) {
  const t = new Ticket('t', 'POST', '/v1/chat/completions', arrivedAt)
  t.model = 'm'
  t.generation = true
  t.requestedClass = 'chat'
  t.promptTokens = promptTokens
  t.expectedOutputTokens = 16
  return { ticket: t, body: { model: 'm', messages: [] }, pool }
}

describe('length-aware TTFT objectives', () => {
  it('adds the allowance per 1,000 prompt tokens', () => {
    expect(lengthAwareTtftMs(300, 100, 500)).toBe(350)
    expect(lengthAwareTtftMs(300, 100, 8000)).toBe(1100)
    expect(lengthAwareTtftMs(300, 100, -5)).toBe(300)
  })

  it('one objective for every length refuses the long prompt; length-aware admits it by its own', () => {
    const flat = setup(undefined)
    const long = flat.request(4000)
    const refused = flat.admission.decide(long)
    expect(refused.kind === 'reject' && refused.error.rejectReason).not.toBe(undefined)
    expect(long.ticket.slo).toBe(flat.config.classes.chat?.slo) // shared, not copied
    expect(flat.admission.decide(flat.request(200)).kind).toBe('admit')

    const aware = setup(200)
    const longAware = aware.request(4000)
    expect(aware.admission.decide(longAware).kind).toBe('admit')
    expect(longAware.ticket.slo?.ttft_ms).toBe(150 + 800)
    const short = aware.request(200)
    expect(aware.admission.decide(short).kind).toBe('admit')
    expect(short.ticket.slo?.ttft_ms).toBe(190)
  })

  it("queues a long prompt by an empty prompt's deadline plus its own prefill, not by its whole allowance", () => {
    const aware = setup(400) // 4,000 tokens: 1,750 ms; 200 tokens: 230 ms
    const pa = aware.admission.poolAdmission(aware.request(0).pool)
    const perToken = pa.estimator.msPerPromptToken()
    expect(perToken).toBeGreaterThan(0)
    const long = aware.admission.decide(aware.request(4000))
    expect(long.kind).toBe('admit')
    // arrived at 1,000: 150 ms for an empty prompt + its prefill at the learned rate
    expect(long.kind === 'admit' && long.order).toBeCloseTo(1000 + 150 + 4000 * perToken, 6)
    expect(long.kind === 'admit' && long.order).toBeLessThan(1000 + 1750)
    const short = aware.admission.decide(aware.request(200))
    expect(short.kind === 'admit' && short.order).toBeCloseTo(1000 + 150 + 200 * perToken, 6)
    pa.close()
  })

  it('a long prompt is admitted for the wait its own length adds, where a short prompt is admitted', () => {
    // short prompts queued ahead of it: they share an engine step, the long one waits for room
    const { aware, pool } = queuedBehindOne(5)
    const pa = aware.admission.poolAdmission(pool)
    const long = aware.request(4000)
    expect(aware.admission.decide(long).kind).toBe('admit')
    // over the budget an empty prompt's plus its prefill at the learned rate gives (75 ms +
    // 4,000 x the rate): the wait its length adds is paid by its allowance too
    const capped = 150 * 0.5 + 4000 * pa.estimator.msPerPromptToken()
    expect(long.ticket.predictedTtftMs).toBeGreaterThan(capped)
    expect(aware.admission.decide(aware.request(100)).kind).toBe('admit')
    pa.close()
  })

  it('a long prompt is refused where a short prompt is: the wait every length shares', () => {
    const { aware, pool } = queuedBehindOne(20)
    const short = aware.admission.decide(aware.request(100))
    expect(short.kind === 'reject' && short.error.rejectReason).toBe('ttft_slo')
    const long = aware.request(4000)
    const refused = aware.admission.decide(long)
    expect(refused.kind === 'reject' && refused.error.rejectReason).toBe('ttft_slo')
    // predicted well within half its own 1,750 ms: the length-aware objective alone admitted it
    expect(long.ticket.predictedTtftMs).toBeLessThan(1750 * 0.5)
    aware.admission.poolAdmission(pool).close()
  })

  it('a long prompt behind longer prompts queued before it is admitted where a short one arriving with it is', () => {
    // the slot busy, three 1,000-token prompts queued: by their deadlines (an empty prompt's
    // plus their prefill) behind a short prompt arriving now and ahead of a 4,000-token one
    const { aware, pool, admitted } = queuedBehindOne(3, 1000)
    for (const a of admitted) expect('lease' in (a as object)).toBe(true)
    const short = aware.admission.decide(aware.request(100))
    expect(short.kind).toBe('admit')
    const long = aware.request(4000)
    const decided = aware.admission.decide(long)
    // behind the three by its deadline, it waits for their prefill as well as its own: what
    // its length adds, paid by its allowance (predicted within half its own 1,750 ms)
    expect(decided.kind).toBe('admit')
    expect(long.ticket.predictedTtftMs).toBeGreaterThan(150 * 0.5 + 3 * 1000 * 0.05)
    expect(long.ticket.predictedTtftMs).toBeLessThan(1750 * 0.5)
    aware.admission.poolAdmission(pool).close()
  })

  it("a short prompt arriving within a long one's prefill goes ahead of it, and only what is ahead of it is predicted", async () => {
    const aware = setup(400)
    const pool = aware.request(0).pool as FakePool
    pool.slots = 1
    const body = { model: 'm', messages: [] }
    const first = aware.admission.admit(aware.request(100).ticket, body, pool)
    expect(first).toHaveProperty('release') // dispatched at once: it holds the one slot
    const long = aware.request(4000)
    expect('lease' in (aware.admission.admit(long.ticket, body, pool) as object)).toBe(true)
    const short = aware.request(200)
    const queued = aware.admission.admit(short.ticket, body, pool)
    // the 4,000 queued tokens are behind it: predicted as the head of the queue, not after them
    expect('lease' in (queued as object)).toBe(true)
    expect(short.ticket.predictedTtftMs).toBeLessThan(long.ticket.predictedTtftMs as number)
    ;(first as Lease).release('ok')
    const lease = await (queued as Queued).lease
    expect(lease).toHaveProperty('release')
    const pa = aware.admission.poolAdmission(pool)
    expect(pa.depths().find((d) => d.class === 'chat')?.queued).toBe(1) // the long one still waits
    pa.close()
  })

  it("raises a budget by what the length adds, never past the request's own objective", () => {
    const aware = setup(400)
    const ttft = new TtftObjectives(aware.config.classes, aware.config.admission)
    const objectives = { ttft_ms: 150 + 1600, tpot_ms: 50, ttft_ms_per_1k_prompt_tokens: 400 } // 4,000 tokens
    // an empty prompt's 75 ms (margin 0.5) + 300 ms its length adds
    expect(ttft.lengthBudget('chat', objectives, 4000, 200, 330, 30)).toBe(375)
    // never below admitBy's budget, never past its own 875 ms
    expect(ttft.lengthBudget('chat', objectives, 4000, 200, 100, 90)).toBe(200)
    expect(ttft.lengthBudget('chat', objectives, 4000, 200, 2000, 30)).toBe(875)
    // not length-aware: the budget as it was
    expect(ttft.lengthBudget('chat', { ttft_ms: 150, tpot_ms: 50 }, 4000, 75, 330, 30)).toBe(75)
  })

  it('the verdict judges a request by the objective of its length', () => {
    const aware = setup(200)
    const long = aware.request(4000)
    aware.admission.decide(long)
    const done = finished(0, { class: 'chat', ttft: 600, e2e: 700, chunks: 3 })
    // 600 ms: a miss against the flat 150 ms, good against 950 ms for 4,000 tokens
    expect(verdictOf(done, objectivesOf(done, aware.config.classes)).kind).toBe('missed')
    done.slo = long.ticket.slo
    expect(verdictOf(done, objectivesOf(done, aware.config.classes))).toEqual({ kind: 'good' })
  })
})

describe('length-aware objectives across pools', () => {
  it('a request the ladder moves to another pool is queued by that pool’s prefill rate, not the first pool’s', () => {
    const { admission, main, small } = twoPoolAdmission({
      classes: {
        chat: {
          priority: 0,
          slo: { ttft_ms: 300, tpot_ms: 50, ttft_ms_per_1k_prompt_tokens: 400 },
          max_kv_usage: 0.8,
          reject_on_ttft: true,
          degrade: [{ action: 'fallback_model', model: 's' }],
        },
      },
      admission: { margin: 0.1, ttft_miss_target: 0 },
    })
    main.load = { ...main.load, waiting: 100 } // main cannot meet it: the ladder falls back to small
    const mainPa = admission.poolAdmission(main)
    const smallPa = admission.poolAdmission(small)
    // the small model prefills four times faster than the shipped prior the main pool runs on
    smallPa.estimator.adoptPriors({ stepMs: 15, prefillTokensPerS: 80_000 })
    const mainPerToken = mainPa.estimator.msPerPromptToken()
    const smallPerToken = smallPa.estimator.msPerPromptToken()
    expect(smallPerToken).toBeLessThan(mainPerToken / 2)

    const input = chatRequest(main, 2000)
    const t = input.ticket
    const d = admission.decide(input)
    expect(d.kind).toBe('admit')
    if (d.kind !== 'admit') return
    expect(d.poolAdmission).toBe(smallPa)
    expect(t.degraded).toEqual(['fallback_model'])
    // an empty prompt's 300 ms plus its own prefill at the pool it waits in
    expect(d.order).toBeCloseTo(1000 + 300 + 2000 * smallPerToken, 6)
    mainPa.close()
    smallPa.close()
  })
})
