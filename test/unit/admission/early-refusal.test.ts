/**
 * Early refusal (issue 14): a queued request of a class refused on its TTFT is predicted
 * again at each dispatch cycle, and refused (503 ttft_slo, with a Retry-After) as soon as
 * its prediction can no longer meet its objective, long before its queue deadline (and the
 * class's margin learns it as a miss); one still on track stays queued; a class that waits
 * (batch) is never refused so.
 */
import { describe, expect, it } from 'vitest'
import { PoolAdmission, Waiting } from '../../../src/admission/pool-admission.js'
import type { Lease } from '../../../src/backends/types.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { GatewayError } from '../../../src/errors.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool } from './fake-pool.js'

const config = configSchema.parse({})

class Item extends Waiting {
  outcome: Lease | GatewayError | undefined
  constructor(clock: ManualClock, className: string, prompt = 100) {
    const t = new Ticket(`r${Math.random()}`, 'POST', '/v1/chat/completions', clock.now())
    t.bodyBytes = 200
    super(t, className, prompt, prompt + 100, {
      queueFeatures: undefined,
      queueMs: 0,
      serverMs: 30,
      totalMs: 30,
    })
  }
  override resolve(r: Lease | GatewayError): void {
    super.resolve(r)
    this.outcome = r
  }
}

function setup() {
  const clock = new ManualClock(10_000)
  const pool = new FakePool()
  pool.slots = 1
  const pa = new PoolAdmission(pool, config.classes, config.admission, clock)
  // the one slot taken, for good: the server makes no progress from here on
  const running = new Item(clock, 'interactive')
  expect(pa.place(running, 't', 1, clock.now() + 60_000)).not.toBeInstanceOf(GatewayError)
  return { clock, pa }
}

describe('early refusal of queued requests', () => {
  it('refuses a queued request within one dispatch cycle of its prediction turning bad', () => {
    const { clock, pa } = setup()
    const far = clock.now() + 60_000 // its deadline is not what refuses it
    const waiting = new Item(clock, 'interactive')
    expect(pa.place(waiting, 't', 1, far)).toBe(waiting)
    pa.pump()
    expect(waiting.outcome).toBeUndefined() // on track: 0 ms waited + ~30 ms at the server
    expect(pa.ttft.margins().interactive).toBe(0.1) // the configured margin
    // the server stalls: 400 ms later it may still make it (400 + queue + 30 < 500) ...
    clock.advance(400)
    pa.pump()
    expect(waiting.outcome).toBeUndefined()
    // ... 80 ms more and it cannot (480 + 30 > 500): the next cycle refuses it
    clock.advance(80)
    pa.pump()
    expect(waiting.outcome).toBeInstanceOf(GatewayError)
    const err = waiting.outcome as GatewayError
    expect(err.code).toBe('GW_ERR_TTFT_SLO')
    expect(err.rejectReason).toBe('ttft_slo')
    expect(err.retryAfterMs).toBeGreaterThan(0)
    expect(waiting.ticket.queuedMs).toBe(480) // its wait, sent in x-gateway-queue-ms
    expect(pa.depths().find((d) => d.class === 'interactive')?.queued).toBe(0)
    // its prediction at arrival was wrong, as a miss's is: the class's margin widens the same
    // way (2 points), so arrivals are refused sooner while the queue refuses
    expect(pa.ttft.margins().interactive).toBe(0.12)
    pa.close()
  })

  it('refuses those behind first when the work queued ahead of them is what makes them miss', () => {
    const { clock, pa } = setup()
    const far = clock.now() + 60_000
    // 60 prompts of 2,000 tokens queue behind a slot that never frees
    const items = Array.from({ length: 60 }, () => new Item(clock, 'interactive', 2_000))
    for (const it of items) pa.place(it, 't', 1, far)
    clock.advance(20)
    pa.pump()
    const refused = items.filter((i) => i.outcome instanceof GatewayError)
    const kept = items.filter((i) => i.outcome === undefined)
    // the ones at the back are refused now; the front of the queue is still on track
    expect(refused.length).toBeGreaterThan(0)
    expect(kept.length).toBeGreaterThan(0)
    expect(items.indexOf(kept[kept.length - 1]!)).toBeLessThan(items.indexOf(refused[0]!))
    pa.close()
  })

  it('never refuses a class that waits (batch) this way', () => {
    const { clock, pa } = setup()
    const waiting = new Item(clock, 'batch')
    pa.place(waiting, 't', 1, clock.now() + 60_000)
    clock.advance(10_000)
    pa.pump()
    expect(waiting.outcome).toBeUndefined()
    pa.close()
  })
})
