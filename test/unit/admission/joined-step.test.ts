/**
 * Prompts that share a request's prefill step: an engine takes every prompt it has into its
 * next step (up to its token budget), so a request's first token comes when the step that
 * holds it ends, and the prompts sent after it but before that step began lengthen it as much
 * as those sent before. The dispatcher sends queued requests in bursts (a freed budget is
 * filled at once), so the first of a burst meets the whole burst's prefill: the estimator
 * learns how many tokens join a request's step (queued on arrival or not) and counts them.
 */
import { describe, expect, it } from 'vitest'
import { EndpointGates } from '../../../src/admission/gate.js'
import { PoolAdmission, Waiting } from '../../../src/admission/pool-admission.js'
import { TtftEstimator } from '../../../src/admission/ttft-estimator.js'
import type { AdmittedLease } from '../../../src/admission/waiting.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool } from './fake-pool.js'

const at = { queueFeatures: undefined, queueMs: 0, serverMs: 30, totalMs: 30 }

describe('Waiting.joinedBy', () => {
  it('counts the tokens sent after it and before its step began, once', () => {
    const w = new Waiting(new Ticket('a', 'POST', '/v1/chat/completions', 0), 'interactive', 100, 200, at)
    w.join(300, 10)
    w.join(500, 20)
    w.join(700, 30)
    // one sent at the very moment the step began was sent on hearing it: it missed it
    expect(w.joinedBy(20)).toBe(300)
    expect(w.joinedTokens).toBe(300)
    expect(w.joinedBy(30)).toBe(0) // told once
  })
})

describe('EndpointGates.tokenFrom and stepBegan', () => {
  it('tells one step end from the next by the streams, however spread the tokens of one step arrive', () => {
    const config = configSchema.parse({})
    const clock = new ManualClock(1_000)
    const gates = new EndpointGates(config.classes, config.admission, clock, {
      value: 20_000,
      source: 'default_prior',
    })
    const a = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
    const b = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
    const c = { stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }
    expect(gates.stepBegan('e', 1_000)).toBeUndefined()
    // three streams' first tokens: they decode there from now on
    for (const s of [a, b, c]) {
      gates.tokenFrom('e', s, 1_000)
      gates.firstToken('e', 1_000, 100)
    }
    // the next step end: its three tokens reach a busy gateway over 3 ms, more than a step's
    // arrival is usually spread; a stream already seen in the step in progress begins the next
    clock.advance(1_020 - clock.now())
    gates.tokenFrom('e', b, 1_020)
    clock.advance(1_022 - clock.now())
    gates.tokenFrom('e', a, 1_022)
    clock.advance(1_023 - clock.now())
    gates.tokenFrom('e', c, 1_023)
    // a request whose first token came with them: its step began at the one before
    expect(gates.stepBegan('e', 1_023)).toBe(1_000)
    // later, the step begun at 1,020 ends
    expect(gates.stepBegan('e', 1_045)).toBe(1_020)
    clock.advance(1_045 - clock.now())
    gates.tokenFrom('e', c, 1_045)
    expect(gates.stepBegan('e', 1_046)).toBe(1_020)
  })
})

describe('TtftEstimator: joined prompts', () => {
  it('learns the tokens that join a request, queued on arrival or not, apart', () => {
    const e = new TtftEstimator({ stepMs: 15, prefillTokensPerS: 20_000 }, new ManualClock())
    for (let i = 0; i < 200; i++) e.onJoined(4_000, true) // queued requests: bursts of 4,000
    expect(e.expectedJoined(true)).toBeCloseTo(4_000, 0)
    expect(e.expectedJoined(false)).toBe(0)
    for (let i = 0; i < 200; i++) e.onJoined(600, false)
    expect(e.expectedJoined(false)).toBeCloseTo(600, 0)
  })
})

describe('PoolAdmission: a request learns the prompts that shared its step', () => {
  it('at its first token, those sent after it and before its step began', () => {
    const config = configSchema.parse({ admission: { max_prefill_tokens_per_endpoint: 8_000 } })
    const clock = new ManualClock(1_000)
    const pa = new PoolAdmission(new FakePool(), config.classes, config.admission, clock)
    const place = (prompt: number) => {
      const t = new Ticket(`r${prompt}`, 'POST', '/v1/chat/completions', clock.now())
      const w = new Waiting(t, 'interactive', prompt, prompt + 100, at)
      const lease = pa.place(w, 'tenant', 1, clock.now() + 60_000) as AdmittedLease
      t.dispatchedAt = clock.now()
      return { t, w, lease }
    }
    const first = place(100)
    clock.advance(10)
    first.t.firstTokenAt = clock.now()
    first.lease.prefilled() // a step ended at 1,010: the next began (nothing else decodes there)
    clock.advance(2)
    const b = place(1_000) // sent at 1,012
    clock.advance(1)
    place(2_000) // 1,013
    clock.advance(1)
    first.lease.tokenGap(first.t, 4, clock.now()) // a step ended at 1,014: the next took both
    clock.advance(1)
    place(3_000) // 1,015: in the step after
    clock.advance(60)
    b.t.firstTokenAt = clock.now()
    b.lease.prefilled()
    expect(b.w.joinedTokens).toBe(2_000)
    const joined = (pa.state() as { estimator: { joinedTokens: { atOnce: number } } }).estimator.joinedTokens
    expect(joined.atOnce).toBe(Math.round(0.05 * 2_000))
    pa.close()
  })
})
