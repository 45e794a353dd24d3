/**
 * A class's share of the prefill budget (classes.<c>.max_prefill_share): a model server
 * prefills first come, first served, so batch may keep only its share of the budget pending
 * at an endpoint, leaving the rest for interactive prompts, which then go at once instead of
 * waiting behind batch prefill; a batch request under its floor (pastGuard) may use all of it.
 */
import { describe, expect, it } from 'vitest'
import { EndpointGates } from '../../../src/admission/gate.js'
import { PoolAdmission, Waiting } from '../../../src/admission/pool-admission.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { GatewayError } from '../../../src/errors.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool } from './fake-pool.js'

function setup(batchShare?: number) {
  const config = configSchema.parse({
    admission: { max_prefill_tokens_per_endpoint: 8_000 },
    ...(batchShare === undefined ? {} : { classes: { batch: { max_prefill_share: batchShare } } }),
  })
  const clock = new ManualClock(1_000)
  const gates = new EndpointGates(config.classes, config.admission, clock, {
    value: 20_000,
    source: 'default_prior',
  })
  const view = new FakePool().views()[0]!
  return { gates, view, config }
}

describe('max_prefill_share', () => {
  it('is 1 for interactive and 0.25 for batch by default', () => {
    const { config } = setup()
    expect(config.classes.interactive?.max_prefill_share).toBe(1)
    expect(config.classes.batch?.max_prefill_share).toBe(0.25)
  })

  it('holds batch once its share of the budget is pending, while interactive still goes', () => {
    const { gates, view } = setup()
    // nothing pending: any prompt goes, whatever its size (one request always may)
    expect(gates.open('batch', 3_000, 3_000)(view)).toBe(true)
    gates.dispatched(view.name, 1_500, 100)
    // 1,500 pending: batch may add up to 2,000 (0.25 x 8,000), interactive up to 8,000
    expect(gates.open('batch', 500, 500)(view)).toBe(true)
    expect(gates.open('batch', 600, 600)(view)).toBe(false)
    expect(gates.open('interactive', 6_000, 6_000)(view)).toBe(true)
    expect(gates.open('interactive', 7_000, 7_000)(view)).toBe(false)
    // under its floor, batch may use the whole budget
    expect(gates.open('batch', 6_000, 6_000, { pastGuard: true })(view)).toBe(true)
  })

  it('says when the share has room again: when the pending prompt is expected to be prefilled', () => {
    const { gates, view } = setup()
    gates.dispatched(view.name, 1_500, 100)
    const never = () => Number.POSITIVE_INFINITY
    expect(gates.reopenInMs(view, 'batch', 600, 600, never)).toBe(100)
    expect(gates.reopenInMs(view, 'interactive', 600, 600, never)).toBe(0)
  })

  it('binds only while a class above has work: with nothing above busy, batch fills the budget', () => {
    const { gates, view } = setup()
    gates.dispatched(view.name, 1_500, 100)
    gates.aboveBusy = (c) => {
      expect(c).toBe('batch')
      return false
    }
    expect(gates.open('batch', 6_000, 6_000)(view)).toBe(true)
    gates.aboveBusy = () => true
    expect(gates.open('batch', 6_000, 6_000)(view)).toBe(false)
  })

  it('a pool binds it while interactive is in flight or queued, and not while it is idle', () => {
    const config = configSchema.parse({ admission: { max_prefill_tokens_per_endpoint: 8_000 } })
    const clock = new ManualClock(1_000)
    const pa = new PoolAdmission(new FakePool(), config.classes, config.admission, clock)
    const item = (cls: string, prompt: number) => {
      const t = new Ticket(`r${Math.random()}`, 'POST', '/v1/chat/completions', clock.now())
      t.bodyBytes = 200
      return new Waiting(t, cls, prompt, prompt + 100, {
        queueFeatures: undefined,
        queueMs: 0,
        serverMs: 30,
        totalMs: 30,
      })
    }
    const dispatched = (w: Waiting, r: unknown) => r !== w && !(r instanceof GatewayError)
    // interactive idle: batch prompts go until the whole budget is pending (3 x 2,500)
    const b = [1, 2, 3].map(() => item('batch', 2_500))
    expect(b.map((w) => dispatched(w, pa.place(w, 't', 1, clock.now() + 60_000)))).toEqual([true, true, true])
    // an interactive request in flight: the next batch prompt waits (7,500 pending > 0.25 x 8,000)
    const i = item('interactive', 100)
    expect(dispatched(i, pa.place(i, 't', 1, clock.now() + 60_000))).toBe(true)
    const next = item('batch', 100)
    expect(pa.place(next, 't', 1, clock.now() + 60_000)).toBe(next)
    pa.close()
  })

  it('set to 1, batch fills the budget as interactive does', () => {
    const { gates, view } = setup(1)
    gates.dispatched(view.name, 1_500, 100)
    expect(gates.open('batch', 6_000, 6_000)(view)).toBe(true)
  })
})
