import { describe, expect, it } from 'vitest'
import type { Admitted } from '../../../src/admission/face.js'
import { PoolAdmission, Waiting } from '../../../src/admission/pool-admission.js'
import { TPOT_JUDGED_AFTER_GAPS } from '../../../src/admission/waiting.js'
import type { Lease } from '../../../src/backends/types.js'
import { ManualClock, systemClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { GatewayError } from '../../../src/errors.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool } from './fake-pool.js'

const config = configSchema.parse({})

/** A queued request that records, as the dispatcher settles it, its lease or its error. */
class Item extends Waiting {
  granted?: Lease
  shedWith?: GatewayError
  constructor(
    readonly name: string,
    className: string,
    readonly tenant: string,
    prompt: number,
  ) {
    const t = new Ticket(name, 'POST', '/v1/chat/completions', systemClock.now())
    t.bodyBytes = 200
    super(t, className, prompt, prompt + 100, {
      queueFeatures: undefined,
      queueMs: 0,
      serverMs: 10,
      totalMs: 10,
    })
  }
  override resolve(r: Lease | GatewayError): void {
    super.resolve(r)
    settle(this, r)
  }
}

function settle(it: Item, r: Lease | GatewayError | Admitted): void {
  if (r instanceof GatewayError) it.shedWith = r
  else if (!(r instanceof Waiting) && 'endpoint' in r) {
    it.granted = r
    dispatched.push(it)
  }
}

function item(id: string, className: string, tenant: string, prompt = 100): Item {
  return new Item(id, className, tenant, prompt)
}

/** Places an item; one dispatched at once (or refused) is recorded at once. */
function place(pa: PoolAdmission, it: Item, tenant: string, weight: number, deadline: number): void {
  settle(it, pa.place(it, tenant, weight, deadline))
}

let dispatched: Item[] = []

function setup(slots: number) {
  dispatched = []
  const pool = new FakePool()
  pool.slots = slots
  const pa = new PoolAdmission(pool, config.classes, config.admission, systemClock)
  return { pool, pa }
}

/** Ends the oldest running request and lets the dispatcher act. */
function completeOne(pa: PoolAdmission): Item | undefined {
  const running = dispatched.find((d) => d.granted !== undefined)
  if (running === undefined) return undefined
  const lease = running.granted as Lease
  delete running.granted
  lease.ended(running.ticket, 'ok')
  pa.pump()
  return running
}

describe('PoolAdmission', () => {
  it('shares a class between tenants by weight: 1:3 within 10% over 400 dispatches', () => {
    const { pa } = setup(1)
    const far = systemClock.now() + 60_000
    // batch: a class that waits (interactive's would be refused early, predicted to miss)
    for (let i = 0; i < 400; i++) {
      place(pa, item(`a${i}`, 'batch', 'a'), 'a', 1, far)
      place(pa, item(`b${i}`, 'batch', 'b'), 'b', 3, far)
    }
    while (dispatched.length < 401) completeOne(pa)
    const counted = dispatched.slice(1, 401) // the first went at once, before both were queued
    const a = counted.filter((d) => d.tenant === 'a').length
    const b = counted.filter((d) => d.tenant === 'b').length
    expect(a + b).toBe(400)
    // each tenant within 10% of its fair share (100 and 300 of 400)
    expect(Math.abs(a - 100)).toBeLessThanOrEqual(10)
    expect(Math.abs(b - 300)).toBeLessThanOrEqual(30)
    pa.close()
  })

  it('lets batch run only while no interactive request waits (backfill)', () => {
    const { pa } = setup(1)
    const far = systemClock.now() + 60_000
    place(pa, item('i0', 'interactive', 't'), 't', 1, far) // takes the slot
    for (let i = 0; i < 3; i++) place(pa, item(`b${i}`, 'batch', 't'), 't', 1, far)
    for (let i = 1; i < 4; i++) place(pa, item(`i${i}`, 'interactive', 't'), 't', 1, far)
    for (let n = 0; n < 6; n++) completeOne(pa)
    expect(dispatched.map((d) => d.name)).toEqual(['i0', 'i1', 'i2', 'i3', 'b0', 'b1', 'b2'])
    pa.close()
  })

  it('holds every class off an endpoint whose streams decode over the TPOT objective, then resumes', () => {
    dispatched = []
    const pool = new FakePool()
    pool.slots = 10
    const clock = new ManualClock()
    const pa = new PoolAdmission(pool, config.classes, config.admission, clock)
    const far = clock.now() + 60_000
    const first = item('i0', 'interactive', 't')
    place(pa, first, 't', 1, far)
    expect(dispatched.map((d) => d.name)).toEqual(['i0'])
    const lease = first.granted as Lease
    lease.prefilled?.(first.ticket) // its prompt is done: the prefill budget is free again
    const onToken = (gapMs: number, now: number) => lease.tokenGap?.(first.ticket, gapMs, now)
    // gaps of 80 ms: the decode guard's mean is over interactive's 50 ms x 0.9
    for (let i = 0; i < 4; i++) {
      clock.advance(80)
      onToken(80, clock.now())
    }
    place(pa, item('b0', 'batch', 't'), 't', 1, far)
    place(pa, item('i1', 'interactive', 't'), 't', 1, far)
    pa.pump()
    expect(dispatched.map((d) => d.name)).toEqual(['i0'])
    // then gaps of 30 ms bring the mean back within it: the guard opens, interactive first
    for (let i = 0; i < 8; i++) {
      clock.advance(30)
      onToken(30, clock.now())
    }
    pa.pump()
    expect(dispatched.map((d) => d.name)).toEqual(['i0', 'i1', 'b0'])
    pa.close()
  })

  it('lets a class served under its floor past a decode guard the classes above keep closed', () => {
    dispatched = []
    const pool = new FakePool()
    pool.slots = 2
    const clock = new ManualClock()
    const floored = configSchema.parse({ classes: { batch: { min_share: 0.5 } } })
    const pa = new PoolAdmission(pool, floored.classes, floored.admission, clock)
    const far = clock.now() + 60_000
    const first = item('i0', 'interactive', 't')
    place(pa, first, 't', 1, far)
    const lease = first.granted as Lease
    lease.prefilled?.(first.ticket)
    const decode = (gapMs: number, windows: number) => {
      for (let i = 0; i <= Math.ceil((200 * windows) / gapMs); i++) {
        clock.advance(gapMs)
        lease.tokenGap?.(first.ticket, gapMs, clock.now())
      }
    }
    decode(80, 1) // over interactive's 50 ms x 0.9: the guard closes, for batch too
    place(pa, item('b0', 'batch', 't'), 't', 1, far)
    place(pa, item('i1', 'interactive', 't'), 't', 1, far)
    pa.pump()
    expect(dispatched.map((d) => d.name)).toEqual(['i0'])
    decode(30, 1) // the guard opens: i1 takes the last slot, while b0 waits (half of it owed to b0)
    pa.pump()
    expect(dispatched.map((d) => d.name)).toEqual(['i0', 'i1'])
    ;(dispatched[1]!.granted as Lease).prefilled?.(dispatched[1]!.ticket)
    decode(80, 2) // closed again
    place(pa, item('i2', 'interactive', 't'), 't', 1, far)
    expect(pa.state()).toMatchObject({ floorOwedTokens: { batch: 50 } })
    lease.ended(first.ticket, 'ok') // a slot frees: batch is due, and goes past the closed guard
    pa.pump()
    expect(dispatched.map((d) => d.name)).toEqual(['i0', 'i1', 'b0'])
    pa.close()
  })

  it('sheds a queued request at its deadline with queue_timeout, not later', async () => {
    const { pa } = setup(1)
    place(pa, item('run', 'interactive', 't'), 't', 1, systemClock.now() + 60_000)
    const waiting = item('late', 'interactive', 't')
    const placedAt = systemClock.now()
    place(pa, waiting, 't', 1, placedAt + 50)
    await new Promise((r) => setTimeout(r, 30))
    expect(waiting.shedWith).toBeUndefined()
    await new Promise((r) => setTimeout(r, 60))
    expect(waiting.shedWith?.code).toBe('GW_ERR_QUEUE_TIMEOUT')
    expect(waiting.shedWith?.rejectReason).toBe('queue_timeout')
    expect(pa.depths().find((d) => d.class === 'interactive')?.queued).toBe(0)
    pa.close()
  })

  it('returns every counter to zero after 1,000 requests cancelled, shed or completed at random', () => {
    const { pa, pool } = setup(4)
    let seed = 42
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    const placed: Item[] = []
    const far = systemClock.now() + 60_000
    for (let i = 0; i < 1000; i++) {
      const it = item(
        `r${i}`,
        rnd() < 0.3 ? 'batch' : 'interactive',
        `t${i % 5}`,
        1 + Math.floor(rnd() * 2000),
      )
      place(pa, it, `t${i % 5}`, 1 + (i % 3), far)
      placed.push(it)
      const r = rnd()
      if (r < 0.3) {
        const victim = placed[Math.floor(rnd() * placed.length)]!
        pa.cancel(victim) // the client left (a no-op when it was already dispatched)
      } else if (r < 0.6) {
        completeOne(pa)
      }
    }
    while (completeOne(pa) !== undefined) {}
    for (const it of placed) pa.cancel(it)
    expect(pa.depths().every((d) => d.queued === 0 && d.inflight === 0)).toBe(true)
    expect(pool.leased).toBe(0)
    pa.close()
  })
})

describe('Retry-After', () => {
  function oneSlot() {
    dispatched = []
    const pool = new FakePool()
    const clock = new ManualClock()
    const cfg = configSchema.parse({
      classes: { interactive: { queue_limit: 1 } },
      admission: { max_inflight_per_endpoint: 1, estimator: { step_ms: 20 } },
    })
    const pa = new PoolAdmission(pool, cfg.classes, cfg.admission, clock)
    return { pa, clock }
  }

  it('says when the busy slot is expected to free, not the 1 ms a queue of one drains in', () => {
    const { pa, clock } = oneSlot()
    const far = clock.now() + 60_000
    const run = item('run', 'interactive', 't')
    run.ticket.expectedOutputTokens = 100
    place(pa, run, 't', 1, far)
    expect(run.granted).toBeDefined()
    run.ticket.dispatchedAt = clock.now()
    place(pa, item('q1', 'interactive', 't'), 't', 1, far) // fills the queue of one
    const full = item('q2', 'interactive', 't')
    place(pa, full, 't', 1, far)
    expect(full.shedWith?.code).toBe('GW_ERR_QUEUE_FULL')
    // the running request has ~100 tokens to go at one 20 ms step each
    expect(full.shedWith?.retryAfterMs).toBeGreaterThanOrEqual(2000)
    expect(full.shedWith?.retryAfterMs).toBeLessThan(2500)
    // half its tokens later, half the wait
    clock.advance(1000)
    Object.assign(run.ticket, { firstTokenAt: clock.now() - 900, contentChunks: 50 })
    const later = item('q3', 'interactive', 't')
    place(pa, later, 't', 1, far)
    expect(later.shedWith?.retryAfterMs).toBeGreaterThanOrEqual(1000)
    expect(later.shedWith?.retryAfterMs).toBeLessThan(1300)
    pa.close()
  })

  it('says when a closed decode guard can open: when its mean decays to the limit, counted from its last gap', () => {
    dispatched = []
    const pool = new FakePool()
    pool.slots = 10
    const clock = new ManualClock()
    const cfg = configSchema.parse({ classes: { interactive: { queue_limit: 1 } } })
    const pa = new PoolAdmission(pool, cfg.classes, cfg.admission, clock)
    const far = clock.now() + 60_000
    const first = item('i0', 'interactive', 't')
    place(pa, first, 't', 1, far)
    const lease = first.granted as Lease
    lease.prefilled?.(first.ticket)
    // gaps of 80 ms: the mean is over interactive's 50 ms x 0.9, the guard closes
    for (let i = 0; i < 4; i++) {
      clock.advance(80)
      lease.tokenGap?.(first.ticket, 80, clock.now())
    }
    place(pa, item('q1', 'interactive', 't'), 't', 1, far) // held by the guard: the queue of one is full
    expect(dispatched.map((d) => d.name)).toEqual(['i0'])
    const refused = (id: string) => {
      const r = item(id, 'interactive', 't')
      place(pa, r, 't', 1, far)
      expect(r.shedWith?.code).toBe('GW_ERR_QUEUE_FULL')
      return r.shedWith?.retryAfterMs as number
    }
    const atLastGap = refused('q2') // 200 x ln(80 / 45) = 115 ms
    clock.advance(50)
    const later = refused('q3')
    expect(atLastGap - later).toBeGreaterThan(45)
    expect(atLastGap - later).toBeLessThanOrEqual(50)
    pa.close()
  })

  it('is never below one engine step', () => {
    const { pa, clock } = oneSlot()
    const far = clock.now() + 60_000
    const run = item('run', 'interactive', 't')
    run.ticket.expectedOutputTokens = 0 // about to end
    place(pa, run, 't', 1, far)
    place(pa, item('q1', 'interactive', 't'), 't', 1, far)
    const full = item('q2', 'interactive', 't')
    place(pa, full, 't', 1, far)
    expect(full.shedWith?.retryAfterMs).toBeGreaterThanOrEqual(20)
    pa.close()
  })
})

describe('learning at the first token', () => {
  it('fits the server part when a request gets its first token, not when its stream ends', () => {
    dispatched = []
    const pool = new FakePool()
    pool.slots = 10
    const clock = new ManualClock()
    const pa = new PoolAdmission(pool, config.classes, config.admission, clock)
    const samples = () => (pa.state() as { estimator: { samples: number } }).estimator.samples
    const first = item('i0', 'interactive', 't')
    place(pa, first, 't', 1, clock.now() + 60_000)
    const lease = first.granted as Lease
    first.ticket.dispatchedAt = clock.now()
    clock.advance(300)
    first.ticket.firstTokenAt = clock.now()
    expect(samples()).toBe(0)
    lease.prefilled?.(first.ticket)
    // judged (and the server part fitted) at once: a long stream still running does not
    // hold back what its first token says
    expect(samples()).toBe(1)
    clock.advance(5_000)
    lease.release('ok')
    expect(samples()).toBe(1) // learned once
    pa.close()
  })

  it("learns the class's TPOT margin from the streams it admitted, at their end", () => {
    dispatched = []
    const pool = new FakePool()
    pool.slots = 10
    const clock = new ManualClock()
    const pa = new PoolAdmission(pool, config.classes, config.admission, clock)
    const margin = () => (pa.state() as { tpotMargin: Record<string, number> }).tpotMargin.interactive
    expect(margin()).toBeCloseTo(0.1, 9)
    /** Admits one interactive stream of 101 tokens, `tokenMs` apart, and ends it. */
    const stream = (id: string, tokenMs: number) => {
      const it = item(id, 'interactive', 't')
      place(pa, it, 't', 1, clock.now() + 60_000)
      const first = clock.now() + 100
      const last = first + 100 * tokenMs
      Object.assign(it.ticket, { stream: true, dispatchedAt: clock.now(), firstTokenAt: first })
      Object.assign(it.ticket, { contentChunks: 101, lastTokenAt: last, finishedAt: last })
      ;(it.granted as Lease).release('ok')
    }
    stream('i0', 80) // over interactive's 50 ms TPOT objective
    expect(pa.tpotMargin('interactive')).toBeCloseTo(0.1 + 0.02 * (1 - 0.005), 9)
    expect(margin()).toBe(0.12) // /admin/state rounds it
    stream('i1', 20) // within it: narrows it a little
    expect(pa.tpotMargin('interactive')).toBeCloseTo(0.1 + 0.02 * (1 - 0.005) - 0.02 * 0.005, 9)
    // a long stream that misses over its first 32 gaps is judged then, while it runs, and not again at its end
    const long = item('i2', 'interactive', 't')
    place(pa, long, 't', 1, clock.now() + 60_000)
    const lease = long.granted as Lease
    const before = pa.tpotMargin('interactive') as number
    for (let i = 0; i < TPOT_JUDGED_AFTER_GAPS - 1; i++) lease.tokenGap?.(long.ticket, 90, clock.now())
    expect(pa.tpotMargin('interactive')).toBe(before)
    lease.tokenGap?.(long.ticket, 90, clock.now())
    expect(pa.tpotMargin('interactive')).toBeCloseTo(before + 0.02 * (1 - 0.005), 9)
    Object.assign(long.ticket, { stream: true, dispatchedAt: clock.now(), firstTokenAt: clock.now() + 100 })
    Object.assign(long.ticket, { contentChunks: 501, lastTokenAt: clock.now() + 50_100 })
    lease.release('ok')
    expect(pa.tpotMargin('interactive')).toBeCloseTo(before + 0.02 * (1 - 0.005), 9)
    // one on track over its first gaps is judged whole at its end: slowed later, it still misses
    clock.advance(401) // the 90 ms gaps closed the decode guard: two time constants without one open it
    const late = item('i3', 'interactive', 't')
    place(pa, late, 't', 1, clock.now() + 60_000)
    const lateLease = late.granted as Lease
    const mid = pa.tpotMargin('interactive') as number
    for (let i = 0; i < TPOT_JUDGED_AFTER_GAPS; i++) lateLease.tokenGap?.(late.ticket, 20, clock.now())
    expect(pa.tpotMargin('interactive')).toBe(mid)
    Object.assign(late.ticket, { stream: true, dispatchedAt: clock.now(), firstTokenAt: clock.now() + 100 })
    Object.assign(late.ticket, { contentChunks: 201, lastTokenAt: clock.now() + 12_100 })
    lateLease.release('ok')
    expect(pa.tpotMargin('interactive')).toBeCloseTo(mid + 0.02 * (1 - 0.005), 9)
    expect(pa.tpotMargin('batch')).toBeUndefined()
    pa.close()
  })
})
