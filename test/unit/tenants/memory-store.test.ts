/** The memory limiter store on fake time: GCRA rpm, tpm reservations, leases, the daily budget. */
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src/clock.js'
import { DAY_MS, type LimitDecision, type TenantLimits } from '../../../src/tenants/limiter.js'
import { MemoryStore } from '../../../src/tenants/memory-store.js'

/** Noon UTC on some day, so a test crosses midnight only when it means to. */
const NOON = Date.UTC(2026, 11, 1, 12)

function store() {
  const clock = new ManualClock(NOON)
  return { clock, limiter: new MemoryStore({ clock, wallClock: clock }) }
}

let seq = 0
const id = () => `req-${++seq}`

/** Whether `limiter` admits one more request of tenant `tenant`. */
async function admits(
  limiter: MemoryStore,
  limits: TenantLimits,
  reserveTokens = 0,
  more: { tenant?: string; requestId?: string; leaseMs?: number } = {},
): Promise<boolean> {
  const d = await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens, ...more })
  return d.allowed
}

function refused(d: LimitDecision) {
  if (d.allowed) throw new Error('expected a refusal')
  return d
}

describe('memory store: rpm (GCRA)', () => {
  const limits: TenantLimits = { rpm: 10 }

  it('admits exactly the limit at once, then one per 60 000 / rpm ms, with the wait to the next', async () => {
    const { clock, limiter } = store()
    let admitted = 0
    for (let i = 0; i < 15; i++) {
      const d = await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0 })
      if (d.allowed) admitted++
    }
    expect(admitted).toBe(10)

    const r = refused(await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0 }))
    expect(r.refusedBy).toBe('rpm')
    expect(r.retryAfterMs).toBe(6_000)
    expect(r.budgetSpent).toBe(false)
    expect(r.requests).toEqual({ limit: 10, remaining: 0, resetMs: 60_000 })

    clock.advance(5_999)
    expect(await admits(limiter, limits, 0)).toBe(false)
    clock.advance(1)
    expect(await admits(limiter, limits, 0)).toBe(true)
    const next = refused(await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0 }))
    expect(next.retryAfterMs).toBe(6_000)

    // Over the next minute, one every 6 s: 10 more, never 11.
    let later = 0
    for (let t = 0; t < 60_000; t += 500) {
      clock.advance(500)
      const d = await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0 })
      if (d.allowed) later++
    }
    expect(later).toBe(10)
  })

  it('reports remaining and reset for the x-ratelimit-*-requests headers', async () => {
    const { clock, limiter } = store()
    const first = await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0 })
    expect(first).toEqual({ allowed: true, requests: { limit: 10, remaining: 9, resetMs: 6_000 } })
    await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0 })
    clock.advance(3_000)
    const d = await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0 })
    expect(d.requests).toEqual({ limit: 10, remaining: 7, resetMs: 15_000 })
  })

  it('keeps tenants apart', async () => {
    const { limiter } = store()
    for (let i = 0; i < 10; i++) await admits(limiter, limits, 0, { tenant: 'a' })
    expect(await admits(limiter, limits, 0, { tenant: 'a' })).toBe(false)
    expect(await admits(limiter, limits, 0, { tenant: 'b' })).toBe(true)
  })
})

describe('memory store: tpm (reservation and settle)', () => {
  const limits: TenantLimits = { tpm: 6_000 }

  it('reserves at admission, refuses what the bucket cannot hold, with the wait until it refills', async () => {
    const { limiter } = store()
    const a = await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 4_000 })
    expect(a).toEqual({ allowed: true, tokens: { limit: 6_000, remaining: 2_000, resetMs: 40_000 } })
    const r = refused(await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 3_000 }))
    expect(r.refusedBy).toBe('tpm')
    // 1 000 tokens short at 100 tokens/s
    expect(r.retryAfterMs).toBe(10_000)
    expect(r.tokens?.remaining).toBe(2_000)
    // a smaller request still fits
    expect(await admits(limiter, limits, 2_000)).toBe(true)
  })

  it('refunds an unused reservation and charges an overrun, once', async () => {
    const { limiter } = store()
    const refundId = id()
    await limiter.check({ tenant: 't', requestId: refundId, limits, reserveTokens: 4_000 })
    const s = await limiter.settle({ tenant: 't', requestId: refundId, limits, usedTokens: 1_000 })
    // remaining = the limit minus the real usage
    expect(s).toEqual({ settled: true, tokens: { limit: 6_000, remaining: 5_000, resetMs: 10_000 } })
    const again = await limiter.settle({ tenant: 't', requestId: refundId, limits, usedTokens: 1_000 })
    expect(again.settled).toBe(false)
    expect(again.tokens?.remaining).toBe(5_000)

    const chargeId = id()
    await limiter.check({ tenant: 't', requestId: chargeId, limits, reserveTokens: 1_000 })
    const c = await limiter.settle({ tenant: 't', requestId: chargeId, limits, usedTokens: 3_000 })
    expect(c.tokens?.remaining).toBe(2_000)
    const never = await limiter.settle({ tenant: 't', requestId: 'never-admitted', limits, usedTokens: 9 })
    expect(never.settled).toBe(false)
  })

  it('never overdraws by more than one reservation, even one larger than the bucket', async () => {
    const { limiter } = store()
    const big = id()
    // larger than the whole bucket: admitted when full, leaving a debt
    expect(await admits(limiter, limits, 8_000, { requestId: big })).toBe(true)
    const r = refused(await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 1 }))
    expect(r.tokens?.remaining).toBe(0)
    // 2 000 of debt and 1 token needed, at 100 tokens/s
    expect(r.retryAfterMs).toBe(20_010)
    // many concurrent reservations: the sum admitted never exceeds the bucket plus one reservation
    const { limiter: l2 } = store()
    let reserved = 0
    for (let i = 0; i < 50; i++) {
      const d = await l2.check({ tenant: 't', requestId: id(), limits, reserveTokens: 700 })
      if (d.allowed) reserved += 700
    }
    expect(reserved).toBeLessThanOrEqual(6_000)
    expect(reserved).toBeGreaterThan(6_000 - 700)
  })

  it('admits the same requestId twice without charging twice', async () => {
    const { limiter } = store()
    const rid = id()
    await limiter.check({ tenant: 't', requestId: rid, limits, reserveTokens: 4_000 })
    const again = await limiter.check({ tenant: 't', requestId: rid, limits, reserveTokens: 4_000 })
    expect(again.allowed).toBe(true)
    expect(again.tokens?.remaining).toBe(2_000)
  })
})

describe('memory store: max_concurrent (leases)', () => {
  const limits: TenantLimits = { max_concurrent: 2 }

  it('holds a slot until settle, and frees it on expiry when settle never comes', async () => {
    const { clock, limiter } = store()
    const a = id()
    await limiter.check({ tenant: 't', requestId: a, limits, reserveTokens: 0, leaseMs: 10_000 })
    await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0, leaseMs: 30_000 })
    const r = refused(await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0 }))
    expect(r.refusedBy).toBe('max_concurrent')
    expect(r.retryAfterMs).toBe(1_000)

    await limiter.settle({ tenant: 't', requestId: a, limits, usedTokens: 0 })
    expect(await admits(limiter, limits, 0)).toBe(true)
    expect(await admits(limiter, limits, 0)).toBe(false)

    // the 30 s lease (a crashed replica's, say) frees itself
    clock.advance(30_000)
    expect(await admits(limiter, limits, 0)).toBe(true)
  })

  it('says to retry when the next lease expires, when that is sooner than the hint', async () => {
    const { clock, limiter } = store()
    await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0, leaseMs: 5_000 })
    await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0, leaseMs: 5_000 })
    clock.advance(4_700)
    const r = refused(await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 0 }))
    expect(r.retryAfterMs).toBe(300)
  })

  it('renews a lease so a long stream keeps its slot; settle after expiry does nothing', async () => {
    const { clock, limiter } = store()
    const long = id()
    const lost = id()
    await limiter.check({ tenant: 't', requestId: long, limits, reserveTokens: 0, leaseMs: 1_000 })
    await limiter.check({ tenant: 't', requestId: lost, limits, reserveTokens: 0, leaseMs: 1_000 })
    clock.advance(900)
    expect(await limiter.renew({ tenant: 't', requestId: long, leaseMs: 1_000 })).toBe(true)
    clock.advance(200)
    // `lost` expired, `long` holds its slot
    expect(await admits(limiter, limits, 0)).toBe(true)
    expect(await admits(limiter, limits, 0)).toBe(false)
    expect(await limiter.renew({ tenant: 't', requestId: lost })).toBe(false)
    const late = await limiter.settle({ tenant: 't', requestId: lost, limits, usedTokens: 5 })
    expect(late.settled).toBe(false)
  })
})

describe('memory store: daily token budget', () => {
  const limits: TenantLimits = { daily_tokens: 1_000 }

  it('admits while the day has budget left, then refuses with budgetSpent until UTC midnight', async () => {
    const { clock, limiter } = store()
    const a = id()
    await limiter.check({ tenant: 't', requestId: a, limits, reserveTokens: 600 })
    // the day's charge (600) is under the budget: admitted, overshooting by one reservation at most
    expect(await admits(limiter, limits, 600)).toBe(true)
    const r = refused(await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 1 }))
    expect(r.refusedBy).toBe('daily_tokens')
    expect(r.budgetSpent).toBe(true)
    expect(r.retryAfterMs).toBe(12 * 3_600_000)

    // a refund reopens it
    await limiter.settle({ tenant: 't', requestId: a, limits, usedTokens: 300 })
    expect(await admits(limiter, limits, 200)).toBe(true)
    expect(await admits(limiter, limits, 1)).toBe(false)

    clock.advance(DAY_MS / 2)
    expect(await admits(limiter, limits, 1)).toBe(true)
  })

  it('names the budget first and waits for every refusing limit', async () => {
    const { limiter } = store()
    const both: TenantLimits = { daily_tokens: 10, rpm: 1 }
    await limiter.check({ tenant: 't', requestId: id(), limits: both, reserveTokens: 10 })
    const r = refused(await limiter.check({ tenant: 't', requestId: id(), limits: both, reserveTokens: 1 }))
    expect(r.refusedBy).toBe('daily_tokens')
    expect(r.retryAfterMs).toBe(12 * 3_600_000)
    expect(r.requests?.remaining).toBe(0)
  })
})

describe('memory store: all limits in one check', () => {
  it('charges nothing when any limit refuses', async () => {
    const { limiter } = store()
    const limits: TenantLimits = { rpm: 100, tpm: 1_000, max_concurrent: 5 }
    expect(await admits(limiter, limits, 900)).toBe(true)
    const r = refused(await limiter.check({ tenant: 't', requestId: id(), limits, reserveTokens: 900 }))
    expect(r.refusedBy).toBe('tpm')
    // the refused request took no rpm slot
    expect(r.requests?.remaining).toBe(99)
  })
})
