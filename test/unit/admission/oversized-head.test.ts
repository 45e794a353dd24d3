/**
 * A prompt larger than an endpoint's whole prefill budget goes alone, once nothing awaits
 * its first token there (fitsBudget). The prediction of a request queued behind one has to
 * know it: before the dispatch forecast did, it never sent such a head, so every request
 * behind it was predicted at the forecast's horizon (twice its objective) and refused.
 */
import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import { Waiting } from '../../../src/admission/waiting.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { GatewayError } from '../../../src/errors.js'
import { TokenEstimator } from '../../../src/openai/token-estimator.js'
import { chatTicket, FakePool, fakeBackends } from './fake-pool.js'

describe('a request queued behind a prompt larger than the prefill budget', () => {
  it('is predicted from the head going alone, not at the horizon, and admitted to the queue', () => {
    const sloMs = 1_000
    const config = configSchema.parse({
      classes: { interactive: { slo: { ttft_ms: sloMs } } },
      admission: { max_prefill_tokens_per_endpoint: 2_000 },
      backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
    })
    const pool = new FakePool('main', ['m'])
    const tokens = new TokenEstimator()
    const admission = new Admission(config, fakeBackends(pool), new ManualClock(1000), tokens)
    let n = 0
    const send = (chars: number) => {
      const body = { model: 'm', messages: [{ role: 'user', content: `${n} ${'x'.repeat(chars)}` }] }
      const t = chatTicket(tokens, body, 16, `t${n++}`)
      return { ticket: t, admitted: admission.admit(t, body, pool) }
    }
    // ~1,500 tokens prefilling (4 characters a token); then ~3,000 (over the whole 2,000 budget) queued
    const first = send(6_000).admitted
    expect(first).not.toBeInstanceOf(GatewayError)
    expect(first).not.toBeInstanceOf(Waiting) // sent at once
    const head = send(12_000)
    expect(head.admitted).toBeInstanceOf(Waiting)
    // the 1,500 prefill at the default prior (20,000 tokens/s) and the head's 3,000: well
    // within the objective, so a short request behind them is queued, not refused
    const behind = send(400)
    expect(behind.admitted).not.toBeInstanceOf(GatewayError)
    expect(behind.admitted).toBeInstanceOf(Waiting)
    const predicted = behind.ticket.predictedTtftMs ?? Number.NaN
    expect(predicted).toBeLessThan(sloMs)
    // the head's prefill is in it: more than that alone at the prior rate
    expect(predicted).toBeGreaterThan(head.ticket.promptTokens / 20)
  })
})
