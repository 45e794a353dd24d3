/**
 * The prefill gate counts the tokens a server must compute: a prompt whose prefix the
 * endpoint is expected to hold (PrefixAwareness.computeAt) takes only the rest of it from
 * the endpoint's prefill budget, where a fresh prompt of the same length must wait.
 */
import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import { AdmittedLease, Waiting } from '../../../src/admission/waiting.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { TokenEstimator } from '../../../src/openai/token-estimator.js'
import { seededText } from '../../helpers/seeded-text.js'
import { chatTicket, FakePool, fakeBackends } from './fake-pool.js'

type Message = { role: string; content: string }

const text = (n: number, seed: number) => seededText(n, seed, '')

/** A 16k-character system prompt and a question: about 4,500 tokens. */
const chat = (seed: number): Message[] => [
  { role: 'system', content: text(16_000, seed) },
  { role: 'user', content: text(2_000, seed + 1) },
]

function setup(prefixCache: boolean) {
  const config = configSchema.parse({
    classes: { interactive: { slo: { ttft_ms: 60_000 } } },
    admission: { max_prefill_tokens_per_endpoint: 6_000, estimator: { prefix_cache: prefixCache } },
    backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
  })
  const pool = new FakePool('main', ['m'], { prefixCache: true })
  const tokens = new TokenEstimator()
  const admission = new Admission(config, fakeBackends(pool), new ManualClock(1000), tokens)
  const send = (messages: Message[]) => {
    const body = { model: 'm', messages }
    const t = chatTicket(tokens, body, 16)
    return { ticket: t, admitted: admission.admit(t, body, pool) }
  }
  const prefilling = () =>
    (admission.state() as { pools: { prefillingTokens: Record<string, number> }[] }).pools[0]
      ?.prefillingTokens['main-0'] ?? 0
  return { send, prefilling }
}

describe('the prefill gate counts only the tokens to compute', () => {
  it('a cached prompt fits beside a pending one where a fresh prompt of the same length waits', () => {
    const { send, prefilling } = setup(true)
    ;(send(chat(100)).admitted as AdmittedLease).release('ok') // served: the server holds its blocks
    const pending = send(chat(900)) // a fresh ~4,500-token prompt, prefilling (no first token yet)
    expect(pending.admitted).toBeInstanceOf(AdmittedLease)
    const held = prefilling()
    expect(held).toBe(pending.ticket.promptTokens)

    const repeated = send(chat(100))
    expect(repeated.admitted).toBeInstanceOf(AdmittedLease) // its ~4,500 tokens are mostly cached
    const computed = (repeated.admitted as AdmittedLease).w.computeTokens ?? Number.NaN
    expect(computed).toBeLessThan(0.1 * repeated.ticket.promptTokens)
    expect(prefilling()).toBe(held + computed) // the ledger holds what it computes, not its prompt

    const fresh = send(chat(700)) // the same length, nothing cached: over the 6,000 budget
    expect(fresh.ticket.promptTokens).toBe(repeated.ticket.promptTokens)
    expect(fresh.admitted).toBeInstanceOf(Waiting)
    expect(fresh.admitted).not.toBeInstanceOf(AdmittedLease)
  })

  it('without prefix awareness the whole prompt counts, and the repeated prompt waits too', () => {
    const { send } = setup(false)
    ;(send(chat(100)).admitted as AdmittedLease).release('ok')
    expect(send(chat(900)).admitted).toBeInstanceOf(AdmittedLease)
    const repeated = send(chat(100))
    expect(repeated.admitted).toBeInstanceOf(Waiting)
    expect(repeated.admitted).not.toBeInstanceOf(AdmittedLease)
  })
})
