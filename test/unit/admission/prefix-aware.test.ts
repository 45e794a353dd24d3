import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import type { AdmittedLease } from '../../../src/admission/waiting.js'
import { ManualClock } from '../../../src/clock.js'
import type { ScorerName } from '../../../src/config/routing.js'
import { configSchema } from '../../../src/config/schema.js'
import { TokenEstimator } from '../../../src/openai/token-estimator.js'
import { seededText } from '../../helpers/seeded-text.js'
import { chatTicket, FakePool, fakeBackends } from './fake-pool.js'

type Message = { role: string; content: string }

const text = (n: number, seed: number) => seededText(n, seed, '')

function setup(prefixCache = true, scorer?: ScorerName) {
  const config = configSchema.parse({
    classes: { interactive: { slo: { ttft_ms: 500 } } },
    admission: { estimator: { prefix_cache: prefixCache } },
    backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
  })
  const pool = new FakePool('main', ['m'], { prefixCache: true, ...(scorer === undefined ? {} : { scorer }) })
  const tokens = new TokenEstimator()
  const admission = new Admission(config, fakeBackends(pool), new ManualClock(1000), tokens)
  /** A request as parse leaves it, and its decision: admitted now (its lease) or not. */
  const send = (messages: Message[]) => {
    const body = { model: 'm', messages }
    const t = chatTicket(tokens, body, 64)
    const admitted = admission.admit(t, body, pool)
    return { ticket: t, admitted }
  }
  return { pool, admission, send }
}

/** A conversation of `turns` turns over a 16k-character system prompt: the history grows each turn. */
function conversation(turns: number, seed: number): Message[] {
  const m: Message[] = [{ role: 'system', content: text(16_000, seed) }]
  for (let i = 0; i < turns; i++) {
    m.push({ role: 'user', content: text(2_000, seed + 10 * i + 1) })
    if (i < turns - 1) m.push({ role: 'assistant', content: text(3_000, seed + 10 * i + 2) })
  }
  return m
}

describe('prefix-cache-aware prediction', () => {
  it('predicts a much lower TTFT for a repeated multi-turn conversation than for a fresh prompt of the same length', () => {
    const { send } = setup()
    for (let turn = 1; turn <= 3; turn++) {
      const r = send(conversation(turn, 100))
      ;(r.admitted as AdmittedLease).release('ok') // served; the server keeps its blocks
    }
    const repeated = send(conversation(4, 100))
    ;(repeated.admitted as AdmittedLease).release('ok') // each is predicted on an idle server
    const fresh = send(conversation(4, 900)) // the same lengths, nothing in common
    expect(repeated.ticket.promptTokens).toBe(fresh.ticket.promptTokens) // about 8,500 tokens
    const r = repeated.ticket.predictedTtftMs ?? Number.NaN
    const f = fresh.ticket.predictedTtftMs ?? Number.NaN
    // fresh: β 0.05 ms x ~8,300 tokens + γ 1.5 x 15 ms ≈ 440 ms; repeated: the history sent
    // before is cached, and the server computes the last reply and the new question (~1,250
    // tokens; the gateway never sees a reply's tokens as a prompt until the next turn) ≈ 85 ms
    expect(f).toBeGreaterThan(400)
    expect(r).toBeLessThan(0.25 * f)
    // the server part the estimator learns from at dispatch prices the computed tokens only
    const lease = repeated.admitted as AdmittedLease
    expect(lease.w.computeTokens).toBeLessThan(0.2 * repeated.ticket.promptTokens)
    expect(lease.w.serverFeatures?.[1]).toBe(lease.w.computeTokens)
    expect((fresh.admitted as AdmittedLease).w.computeTokens).toBe(fresh.ticket.promptTokens)
  })

  it('a fresh prompt over a 16k-character system prompt seen before is priced by what follows it', () => {
    const { send, pool } = setup()
    ;(send(conversation(1, 100)).admitted as AdmittedLease).release('ok')
    const other = conversation(1, 100)
    other[1] = { role: 'user', content: text(2_000, 4242) } // same system prompt, another question
    const d = send(other)
    const w = (d.admitted as AdmittedLease).w
    // the system prompt is about 4,000 of its ~4,500 tokens
    expect(w.computeTokens).toBeGreaterThan(400)
    expect(w.computeTokens).toBeLessThan(700)
    expect(pool.prefixCaches[0]?.index.size).toBeGreaterThan(300)
  })

  it.each(['least-wait', 'prefix-affinity'] as const)(
    'with admission.estimator.prefix_cache false every prompt token counts, and one endpoint routed by %s hashes nothing',
    (scorer) => {
      const { send, pool } = setup(false, scorer)
      for (let turn = 1; turn <= 3; turn++)
        (send(conversation(turn, 100)).admitted as AdmittedLease).release('ok')
      const repeated = send(conversation(4, 100))
      ;(repeated.admitted as AdmittedLease).release('ok')
      const fresh = send(conversation(4, 900))
      expect(repeated.ticket.predictedTtftMs).toBeCloseTo(fresh.ticket.predictedTtftMs ?? 0, 6)
      expect((repeated.admitted as AdmittedLease).w.computeTokens).toBe(repeated.ticket.promptTokens)
      expect(pool.prefixCaches[0]?.index.size ?? 0).toBe(0)
    },
  )

  it('shows the cut and each endpoint index in the state', () => {
    const { send, admission } = setup()
    ;(send(conversation(2, 100)).admitted as AdmittedLease).release('ok')
    const state = admission.state() as { pools: { prefixCache: object }[] }
    expect(state.pools[0]?.prefixCache).toEqual({ enabled: true, blockSize: 16, charsPerToken: 4, cuts: 1 })
  })
})
