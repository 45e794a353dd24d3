/**
 * A request's step meets the prompts that arrive behind it before that step begins; the
 * picker spreads a class's arrivals over the pool's endpoints, so one endpoint's step meets
 * its share of them (with two replicas, half), not the class's whole arrival rate.
 */
import { describe, expect, it } from 'vitest'
import { PoolAdmission, Waiting } from '../../../src/admission/pool-admission.js'
import type { AdmittedLease } from '../../../src/admission/waiting.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool } from './fake-pool.js'

describe('PoolPredictor.forecast: arrivals spread over the endpoints', () => {
  it('expects a step to meet its endpoint share of the arriving prompts', () => {
    const config = configSchema.parse({ admission: { max_prefill_tokens_per_endpoint: 100_000 } })
    const clock = new ManualClock(1_000)
    const pool = new FakePool()
    const pa = new PoolAdmission(pool, config.classes, config.admission, clock)
    const at = { queueFeatures: undefined, queueMs: 0, serverMs: 20, totalMs: 20 }
    // arrivals of 1,000 tokens every 10 ms, each dispatched (the fake pool has slots)
    let first: { t: Ticket; lease: AdmittedLease } | undefined
    for (let i = 0; i < 20; i++) {
      const t = new Ticket(`r${i}`, 'POST', '/v1/chat/completions', clock.now())
      const lease = pa.place(
        new Waiting(t, 'interactive', 1_000, 1_100, at),
        'tenant',
        1,
        1e9,
      ) as AdmittedLease
      first ??= { t, lease }
      clock.advance(10)
    }
    // a step in progress at the endpoint: its first stream's first token began it
    first!.t.firstTokenAt = clock.now()
    first!.lease.prefilled()
    const withTokens = (endpoints: number) => {
      pool.endpointsUp = endpoints
      const views = pool.views()
      return pa.predictor.forecast('interactive', views, { tokens: 0, requests: 0 }, 100, 200, () => true, 0)
        .forecast!.withTokens
    }
    const one = withTokens(1)
    expect(one).toBeGreaterThan(0)
    expect(withTokens(2)).toBeCloseTo(one / 2, 0)
    pa.close()
  })
})
