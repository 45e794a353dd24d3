/**
 * The degrade ladder's walk (ladder.ts) over what a request is predicted to miss
 * (forecast.ts): steps in their order, the threats predicted again before each, a step
 * tried only where it can help (cap_max_tokens never on a TTFT-only miss; on KV, TPOT or
 * E2E it is), and the walk ending as soon as nothing is threatened.
 */
import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import { type ForecastInput, forecast, type Threat } from '../../../src/admission/forecast.js'
import { helps, walkLadder } from '../../../src/admission/ladder.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema, type DegradeStep } from '../../../src/config/schema.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool, fakeBackends } from './fake-pool.js'

const BASE: ForecastInput = {
  ttftMs: 100,
  ttftBudgetMs: 250,
  kvBlocked: false,
  kvOvercommit: false,
  stepMs: 10,
  outputTokens: 101,
  tpotMs: 50,
  e2eMs: 10_000,
  margin: 0.2,
}

describe('forecast', () => {
  it('threatens nothing when every objective is met', () => {
    const f = forecast(BASE)
    expect([...f.threats]).toEqual([])
    expect(f.tpotMs).toBe(10)
    expect(f.e2eMs).toBe(100 + 100 * 10)
  })

  it('names each objective predicted missed, with the margin taken off', () => {
    expect([...forecast({ ...BASE, ttftMs: 251 }).threats]).toEqual(['ttft'])
    expect([...forecast({ ...BASE, kvBlocked: true }).threats]).toEqual(['kv'])
    // 41 ms is over 50 × (1 − 0.2) = 40, 39 is not
    expect([...forecast({ ...BASE, stepMs: 41, e2eMs: undefined }).threats]).toEqual(['tpot'])
    expect([...forecast({ ...BASE, stepMs: 39, e2eMs: undefined }).threats]).toEqual([])
    // E2E: 100 + 100 × 10 = 1,100 ms against 1,300 × 0.8 = 1,040
    expect([...forecast({ ...BASE, e2eMs: 1_300 }).threats]).toEqual(['e2e'])
  })

  it('a KV need over every free cache is a lost TPOT (a preemption), whatever the step', () => {
    const f = forecast({ ...BASE, kvOvercommit: true })
    expect(f.tpotMs).toBe(Number.POSITIVE_INFINITY)
    expect(f.threats.has('tpot')).toBe(true)
  })

  it('without objectives for TPOT or E2E, neither is threatened', () => {
    const f = forecast({ ...BASE, stepMs: 500, tpotMs: undefined, e2eMs: undefined })
    expect([...f.threats]).toEqual([])
  })
})

describe('walkLadder', () => {
  const cap: DegradeStep = { action: 'cap_max_tokens', max_tokens: 64 }
  const reason: DegradeStep = { action: 'reduce_reasoning', effort: 'low' }
  const fallback: DegradeStep = { action: 'fallback_model', model: 'small' }
  const demote: DegradeStep = { action: 'demote_to_batch', class: 'batch' }

  /** A walk whose threats are scripted: the i-th prediction returns script[i]. */
  function scripted(script: Threat[][]) {
    const predictions: number[] = []
    const tried: string[] = []
    let i = 0
    const threats = () => {
      predictions.push(i)
      return new Set(script[Math.min(i, script.length - 1)])
    }
    const apply = (s: DegradeStep) => {
      tried.push(s.action)
      i++
      return s.action === 'demote_to_batch' ? ('done' as const) : ('applied' as const)
    }
    return { threats, apply, tried, predictions }
  }

  it('skips cap_max_tokens on a TTFT-only miss (it does not change TTFT) and goes on in order', () => {
    const s = scripted([['ttft'], ['ttft'], []])
    const applied = walkLadder([cap, reason, fallback, demote], s.threats, s.apply)
    expect(s.tried).toEqual(['reduce_reasoning', 'fallback_model'])
    expect(applied).toEqual(['reduce_reasoning', 'fallback_model'])
    expect(helps('cap_max_tokens', new Set(['ttft']))).toBe(false)
  })

  for (const threat of ['kv', 'tpot', 'e2e'] as const) {
    it(`takes cap_max_tokens on a ${threat} threat, and stops when the prediction after it is clear`, () => {
      const s = scripted([[threat], []])
      const applied = walkLadder([cap, fallback, demote], s.threats, s.apply)
      expect(applied).toEqual(['cap_max_tokens'])
      // predicted before the first step and again after it; nothing more once clear
      expect(s.predictions).toEqual([0, 1])
    })
  }

  it('predicts again before every step: a threat that changes picks the steps that help it', () => {
    // E2E first (cap helps), then only TTFT is left (cap would not, demote does)
    const s = scripted([['e2e', 'ttft'], ['ttft'], []])
    const applied = walkLadder([cap, { ...cap, max_tokens: 16 }, demote], s.threats, s.apply)
    expect(applied).toEqual(['cap_max_tokens', 'demote_to_batch'])
    expect(s.predictions).toEqual([0, 1, 1])
  })

  it('a step that does not apply is skipped without ending the walk; done ends it', () => {
    const tried: string[] = []
    const applied = walkLadder(
      [cap, demote, fallback],
      () => new Set<Threat>(['kv', 'ttft']),
      (s) => {
        tried.push(s.action)
        return s.action === 'cap_max_tokens' ? 'skipped' : 'done'
      },
    )
    expect(tried).toEqual(['cap_max_tokens', 'demote_to_batch'])
    expect(applied).toEqual(['demote_to_batch'])
  })

  it('nothing threatened: no step is tried', () => {
    const tried: string[] = []
    expect(
      walkLadder(
        [cap, demote],
        () => new Set(),
        (s) => {
          tried.push(s.action)
          return 'applied'
        },
      ),
    ).toEqual([])
    expect(tried).toEqual([])
  })
})

describe('the ladder in admission (fake clock)', () => {
  /** Interactive with an E2E objective a long answer misses: cap_max_tokens first, then demote. */
  function setup() {
    const config = configSchema.parse({
      classes: {
        interactive: {
          priority: 0,
          slo: { ttft_ms: 2_000, e2e_ms: 2_000 },
          reject_on_ttft: true,
          degrade: [{ action: 'cap_max_tokens', max_tokens: 64 }, { action: 'demote_to_batch' }],
        },
      },
      admission: { margin: 0.2, ttft_miss_target: 0, estimator: { step_ms: 10 } },
      backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
    })
    const pool = new FakePool('main', ['m'])
    const admission = new Admission(config, fakeBackends(pool), new ManualClock(1000))
    const request = (maxTokens: number) => {
      const t = new Ticket('t', 'POST', '/v1/chat/completions', 1000)
      t.model = 'm'
      t.generation = true
      t.requestedClass = 'interactive'
      t.promptTokens = 200
      t.expectedOutputTokens = maxTokens
      t.demotable = true
      const body: Record<string, unknown> = { model: 'm', messages: [], max_tokens: maxTokens }
      return { ticket: t, body, pool }
    }
    return { admission, request }
  }

  it('caps max_tokens where the E2E objective is threatened, re-predicts, and stops there', () => {
    const { admission, request } = setup()
    // 500 tokens × 10 ms ≈ 5 s of decode against 2 s × 0.8: capped to 64 (≈ 0.65 s), then met
    const r = request(500)
    const d = admission.decide(r)
    expect(d.kind).toBe('admit')
    expect(r.ticket.degraded).toEqual(['cap_max_tokens'])
    expect(r.body.max_tokens).toBe(64)
    expect(r.ticket.expectedOutputTokens).toBe(64)
    expect(r.ticket.class).toBe('interactive') // not demoted: nothing was left to save it from
  })

  it('leaves a request that meets its objectives as it is', () => {
    const { admission, request } = setup()
    const r = request(50)
    expect(admission.decide(r).kind).toBe('admit')
    expect(r.ticket.degraded).toEqual([])
    expect(r.body.max_tokens).toBe(50)
  })
})
