/**
 * Admission over a real pool (createBackends: four endpoints, fail-open so they are usable
 * without a scrape; nothing is sent) that routes by prefix: the request goes where its
 * prefix is, and its predicted TTFT prices what that endpoint must compute, the same tokens
 * the estimator is given at dispatch.
 */
import { Registry } from 'prom-client'
import { afterEach, describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import type { Queued } from '../../../src/admission/face.js'
import type { AdmittedLease } from '../../../src/admission/waiting.js'
import { createBackends } from '../../../src/backends/backends.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { GatewayError } from '../../../src/errors.js'
import { TokenEstimator } from '../../../src/openai/token-estimator.js'
import { seededText } from '../../helpers/seeded-text.js'
import { chatTicket } from './fake-pool.js'

type Message = { role: string; content: string }

const text = (n: number, seed: number) => seededText(n, seed)

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of closers.splice(0)) await c()
})

function setup(scorer: 'least-wait' | 'prefix-affinity', admissionConfig: object = {}) {
  const config = configSchema.parse({
    classes: { interactive: { slo: { ttft_ms: 2_000 } } },
    admission: admissionConfig,
    backends: {
      pools: [
        {
          name: 'main',
          models: ['m'],
          endpoints: [1, 2, 3, 4].map((i) => `http://127.0.0.1:${i}`),
          fail_open: true,
          routing: { scorer },
        },
      ],
    },
  })
  const clock = new ManualClock(1000)
  const backends = createBackends(config, { clock, registry: new Registry() })
  closers.push(() => backends.close())
  const tokens = new TokenEstimator()
  const admission = new Admission(config, backends, clock, tokens)
  const pool = backends.pools()[0]!
  const pa = admission.poolAdmission(pool)
  /** Admits a request: its lease, its place in the queue, or its refusal. */
  const admit = (messages: Message[], session?: string) => {
    const body = { model: 'm', messages }
    const t = chatTicket(tokens, body, 64)
    t.sessionId = session
    return { ticket: t, admitted: admission.admit(t, body, pool) }
  }
  const send = (messages: Message[], session?: string) => {
    const { ticket, admitted } = admit(messages, session)
    const lease = admitted as AdmittedLease
    expect(lease.endpoint).toBeDefined() // admitted at once: idle endpoints
    return { ticket, lease }
  }
  return { send, admit, pa, pool }
}

function conversation(turns: number, seed: number): Message[] {
  const m: Message[] = [{ role: 'system', content: text(8_000, seed) }]
  for (let i = 0; i < turns; i++) {
    m.push({ role: 'user', content: text(1_500, seed + 10 * i + 1) })
    if (i < turns - 1) m.push({ role: 'assistant', content: text(2_000, seed + 10 * i + 2) })
  }
  return m
}

/**
 * A prefill budget of 1,000 tokens; two conversations, each cached on its own endpoint; then
 * every endpoint busy with a 600-token prompt in prefill (`longAtA`: a 4,000-token one at A's
 * home, about 215 ms), so both next turns queue.
 */
function queuedTurns(longAtA = false, refuseRecompute = true) {
  const t = setup('prefix-affinity', {
    max_prefill_tokens_per_endpoint: 1_000,
    refuse_recompute: refuseRecompute,
  })
  const a = t.send(conversation(1, 100), 'a')
  const b = t.send(conversation(1, 300), 'b')
  const homeA = a.lease.endpoint.name
  const homeB = b.lease.endpoint.name
  expect(homeB).not.toBe(homeA)
  a.lease.release('ok')
  b.lease.release('ok')
  const blockers = new Map<string, AdmittedLease>()
  if (longAtA) {
    // the same session: it goes to A's home
    const long = t.send([{ role: 'user', content: text(16_000, 7) }], 'a').lease
    expect(long.endpoint.name).toBe(homeA)
    blockers.set(homeA, long)
  }
  for (let i = blockers.size; i < 4; i++) {
    const { lease } = t.send([{ role: 'user', content: text(2_400, 7 + i) }])
    blockers.set(lease.endpoint.name, lease)
  }
  expect(blockers.size).toBe(4)
  const turnA = t.admit(conversation(2, 100)).admitted as Queued
  const turnB = t.admit(conversation(2, 300)).admitted as Queued
  expect('endpoint' in turnA || 'endpoint' in turnB).toBe(false)
  return { ...t, homeA, homeB, blockers, turnA, turnB }
}

describe('admission with prefix routing', () => {
  it('sends a conversation back to its endpoint and prices only what that endpoint must compute', () => {
    const { send, pa } = setup('prefix-affinity')
    const endpoints = new Set<string>()
    const share: number[] = []
    for (let turn = 1; turn <= 5; turn++) {
      // another conversation between its turns, on its own endpoint
      send(conversation(turn, 500)).lease.release('ok')
      const { ticket, lease } = send(conversation(turn, 100))
      endpoints.add(lease.endpoint.name)
      share.push((lease.w.computeTokens ?? Number.NaN) / ticket.promptTokens)
      // routing and prediction agree: the prediction's server part is the one at dispatch
      expect(pa.estimator.serverMs(lease.w.serverFeatures ?? [])).toBeCloseTo(lease.w.prediction.serverMs, 6)
      lease.release('ok')
    }
    expect(endpoints.size).toBe(1)
    // effective tokens shrink with the matched prefix: all of the first, then the new turn only
    expect(share[0]).toBe(1)
    for (let i = 1; i < share.length; i++) {
      expect(share[i]).toBeLessThan(share[i - 1]!)
      expect(share[i]).toBeLessThan(0.5)
    }
  })

  it('least-wait: the conversation wanders and the prediction (a mean over the endpoints) is not what dispatch meets', () => {
    const { send, pa } = setup('least-wait')
    const endpoints = new Set<string>()
    let disagree = 0
    for (let turn = 1; turn <= 5; turn++) {
      send(conversation(turn, 500)).lease.release('ok')
      const { lease } = send(conversation(turn, 100))
      endpoints.add(lease.endpoint.name)
      const atDispatch = pa.estimator.serverMs(lease.w.serverFeatures ?? [])
      if (Math.abs(atDispatch - lease.w.prediction.serverMs) > 1) disagree++
      lease.release('ok')
    }
    expect(endpoints.size).toBeGreaterThan(1)
    expect(disagree).toBeGreaterThan(0)
  })

  it('with prefix pricing off the conversation still goes back to its endpoint, priced whole', () => {
    const { send } = setup('prefix-affinity', { estimator: { prefix_cache: false } })
    const endpoints = new Set<string>()
    for (let turn = 1; turn <= 4; turn++) {
      send(conversation(turn, 500)).lease.release('ok')
      const { ticket, lease } = send(conversation(turn, 100))
      endpoints.add(lease.endpoint.name)
      expect(lease.w.computeTokens).toBe(ticket.promptTokens)
      lease.release('ok')
    }
    expect(endpoints.size).toBe(1)
  })

  it('session affinity reaches the picker from x-session-id (Ticket.sessionId)', () => {
    const { send, pool } = setup('prefix-affinity')
    const where = new Map<string, Set<string>>()
    for (let i = 0; i < 12; i++) {
      const s = `session-${i % 3}`
      const { lease } = send([{ role: 'user', content: text(1_000, 9_000 + i) }], s)
      where.set(s, (where.get(s) ?? new Set()).add(lease.endpoint.name))
      lease.release('ok')
    }
    for (const at of where.values()) expect(at.size).toBe(1)
    const routing = (pool.state() as { routing: { decisions: Record<string, number>; sessions: number } })
      .routing
    expect(routing.decisions.session).toBe(9)
    expect(routing.sessions).toBe(3)
  })

  it('holds a turn for the endpoint caching its history while a short prefill there closes it', async () => {
    // a prefill budget of 1,000 tokens: a 600-token prompt in prefill leaves no room for the
    // turn's new 900; the other endpoints, with nothing in prefill, would take the whole turn
    const { send, admit } = setup('prefix-affinity', { max_prefill_tokens_per_endpoint: 1_000 })
    const first = send(conversation(1, 100), 's')
    const home = first.lease.endpoint.name
    first.lease.release('ok')
    // the same session, an unrelated prompt: it goes to the same endpoint and is in prefill
    // there for about 45 ms, less than the others would take to compute the history (~120)
    const blocker = send([{ role: 'user', content: text(2_400, 7) }], 's')
    expect(blocker.lease.endpoint.name).toBe(home)
    const turn = admit(conversation(2, 100)).admitted
    expect('endpoint' in turn).toBe(false) // queued, not sent elsewhere
    const queued = turn as Queued
    blocker.lease.prefilled() // the home opens: the dispatcher runs
    const lease = (await queued.lease) as AdmittedLease
    expect(lease.endpoint.name).toBe(home)
    expect((lease.w.computeTokens ?? 0) / lease.w.promptTokens).toBeLessThan(0.5)
  })

  it('sends the turn elsewhere at once when its endpoint reopens later than the history would be recomputed', () => {
    const { send, admit } = setup('prefix-affinity', { max_prefill_tokens_per_endpoint: 1_000 })
    const first = send(conversation(1, 100), 's')
    const home = first.lease.endpoint.name
    first.lease.release('ok')
    // 4,000 tokens in prefill at its endpoint: about 215 ms, more than the ~120 a recompute costs
    const blocker = send([{ role: 'user', content: text(16_000, 7) }], 's')
    expect(blocker.lease.endpoint.name).toBe(home)
    const lease = admit(conversation(2, 100)).admitted as AdmittedLease
    expect(lease.endpoint.name).not.toBe(home)
    expect(lease.w.computeTokens).toBe(lease.w.promptTokens)
  })

  it('past capacity (a request of its class queued behind it), holds a turn for its home rather than recompute it where a prefill just ended', async () => {
    // at A's home a 4,000-token prefill (about 215 ms: more than the ~120 ms its history
    // would take to recompute elsewhere), a short one everywhere else
    const { homeA, homeB, blockers, turnA, pa } = queuedTurns(true)
    // an endpoint that is home to neither opens, with no prefill under way: the head stays
    // queued for its home (B waits behind it), where without a queue it would go there now
    const other = [...blockers.keys()].find((n) => n !== homeA && n !== homeB)!
    blockers.get(other)!.prefilled()
    await new Promise((r) => setImmediate(r))
    expect(pa.depths().find((d) => d.class === 'interactive')?.queued).toBe(2)
    blockers.get(homeA)!.prefilled()
    const lease = (await turnA.lease) as AdmittedLease
    expect(lease.endpoint.name).toBe(homeA)
    expect((lease.w.computeTokens ?? 0) / lease.w.promptTokens).toBeLessThan(0.5)
  })

  describe('out of turn: a head whose home is closed lets a request behind it go to its own open home', () => {
    it('serves the follower at its home, then the head at its own', async () => {
      const { homeA, homeB, blockers, turnA, turnB, pa } = queuedTurns()
      blockers.get(homeB)!.prefilled() // B's home opens; A's stays closed
      await new Promise((r) => setImmediate(r))
      expect(pa.depths().find((d) => d.class === 'interactive')?.queued).toBe(1) // B went, A waits
      const b = (await turnB.lease) as AdmittedLease
      expect(b.endpoint.name).toBe(homeB)
      expect((b.w.computeTokens ?? 0) / b.w.promptTokens).toBeLessThan(0.5)
      blockers.get(homeA)!.prefilled()
      const a = (await turnA.lease) as AdmittedLease
      expect(a.endpoint.name).toBe(homeA)
      expect((a.w.computeTokens ?? 0) / a.w.promptTokens).toBeLessThan(0.5)
    })

    it('passes a head that could go elsewhere over no more times than the pool has endpoints', async () => {
      // refuse_recompute off: past capacity a head its home cannot serve in time goes elsewhere
      // and recomputes (on, it is refused: the next test)
      const { homeA, homeB, blockers, turnA, turnB, pa } = queuedTurns(false, false)
      const head = turnA as unknown as { bypassed: number; heldSince: number; dispatchBy: number }
      head.bypassed = 4
      head.heldSince = -1_000_000 // held long enough already: it is not held again
      // B queues behind it (past capacity), but its home could no longer serve it in time
      head.dispatchBy = -1_000_000
      blockers.get(homeB)!.prefilled() // B's home opens
      const a = (await turnA.lease) as AdmittedLease
      expect(a.endpoint.name).toBe(homeB) // A goes where it can, recomputed
      expect(a.w.computeTokens).toBe(a.w.promptTokens)
      expect(pa.depths().find((d) => d.class === 'interactive')?.queued).toBe(1) // B waits
      a.prefilled() // A's prefill at B's home is done: B goes (there, or to A's home)
      blockers.get(homeA)!.prefilled()
      expect(((await turnB.lease) as AdmittedLease).endpoint).toBeDefined()
    })

    it('past capacity refuses a head its home cannot serve in time rather than recompute its history elsewhere', async () => {
      const { homeB, blockers, turnA, turnB, pa } = queuedTurns()
      // B queues behind it (past capacity); A's home could no longer serve it in time, and
      // computed elsewhere it would cost more than twice what it costs at home
      const head = turnA as unknown as { heldSince: number; dispatchBy: number }
      head.heldSince = -1_000_000 // held long enough already: it is not held again
      head.dispatchBy = -1_000_000
      blockers.get(homeB)!.prefilled() // B's home opens: the dispatcher weighs A
      const refused = await turnA.lease
      expect(refused).toBeInstanceOf(GatewayError)
      const err = refused as GatewayError
      expect(err.code).toBe('GW_ERR_TTFT_SLO')
      expect(err.retryAfterMs).toBeGreaterThan(0) // when its home reopens
      expect(((await turnB.lease) as AdmittedLease).endpoint.name).toBe(homeB) // B goes to its own home
      expect((pa.state() as { refusedRecompute: number }).refusedRecompute).toBe(1)
    })

    it('lets requests behind a held head go to their open homes, however often it was passed over', async () => {
      const { homeA, homeB, blockers, turnA, turnB, pa } = queuedTurns()
      ;(turnA as unknown as { bypassed: number }).bypassed = 4
      blockers.get(homeB)!.prefilled() // A's home reopens soon: A is held for it
      expect(((await turnB.lease) as AdmittedLease).endpoint.name).toBe(homeB)
      expect(pa.depths().find((d) => d.class === 'interactive')?.queued).toBe(1)
      blockers.get(homeA)!.prefilled()
      expect(((await turnA.lease) as AdmittedLease).endpoint.name).toBe(homeA)
    })
  })
})
