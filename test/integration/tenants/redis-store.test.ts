/**
 * The Redis limiter store against a real redis-server: the memory store's behaviours on
 * Redis's clock, keys in one cluster slot per tenant with expiries, and two stores (two
 * gateway replicas) sharing one tenant's rpm.
 */
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DAY_MS, type LimitDecision, type TenantLimits } from '../../../src/tenants/limiter.js'
import { RedisStore } from '../../../src/tenants/redis-store.js'
import { type RedisServer, startRedis } from '../../helpers/redis.js'

let server: RedisServer
let store: RedisStore
let raw: Redis

beforeAll(async () => {
  server = await startRedis()
  // a generous per-call timeout: these tests are about behaviour, not speed, on a loaded machine
  store = new RedisStore({ url: server.url, timeoutMs: 1_000 })
  raw = new Redis(server.url)
  await store.ready()
})

afterAll(async () => {
  await store?.close()
  raw?.disconnect()
  await server?.stop()
})

let seq = 0
const id = () => `req-${++seq}`
/** A fresh tenant per test, so tests share one server without sharing state. */
const tenant = () => `tenant-${seq++}-${Math.random().toString(36).slice(2, 8)}`
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function refused(d: LimitDecision) {
  if (d.allowed) throw new Error('expected a refusal')
  return d
}

describe('redis store: rpm (GCRA on Redis time)', () => {
  it('admits exactly the limit at once and says when the next one fits', async () => {
    const t = tenant()
    const limits: TenantLimits = { rpm: 6 }
    let admitted = 0
    for (let i = 0; i < 10; i++) {
      if ((await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 0 })).allowed) admitted++
    }
    expect(admitted).toBe(6)
    const r = refused(await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 0 }))
    expect(r.refusedBy).toBe('rpm')
    expect(r.budgetSpent).toBe(false)
    // one every 10 s: the wait is what is left of it (the calls above took some ms)
    expect(r.retryAfterMs).toBeGreaterThan(8_000)
    expect(r.retryAfterMs).toBeLessThanOrEqual(10_000)
    expect(r.requests?.limit).toBe(6)
    expect(r.requests?.remaining).toBe(0)
    expect(r.requests?.resetMs).toBeGreaterThan(58_000)
    expect(r.requests?.resetMs).toBeLessThanOrEqual(60_000)
  })

  it('spaces what is over the burst one emission interval apart', async () => {
    const t = tenant()
    const limits: TenantLimits = { rpm: 300 } // one per 200 ms
    for (let i = 0; i < 300; i++) await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 0 })
    const start = performance.now()
    let admitted = 0
    while (performance.now() - start < 1_500) {
      if ((await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 0 })).allowed) admitted++
      await sleep(10)
    }
    const elapsed = performance.now() - start
    expect(admitted).toBeGreaterThanOrEqual(Math.floor(elapsed / 200) - 1)
    expect(admitted).toBeLessThanOrEqual(Math.ceil(elapsed / 200) + 1)
  })
})

describe('redis store: tpm (reservation and settle)', () => {
  // 600 tpm = 10 tokens/s: the few ms a call takes refill at most a token or two
  const limits: TenantLimits = { tpm: 600 }

  it('reserves at admission, refuses what does not fit, with the refill wait', async () => {
    const t = tenant()
    const a = await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 400 })
    expect(a.allowed).toBe(true)
    expect(a.tokens?.limit).toBe(600)
    expect(a.tokens?.remaining).toBe(200)
    expect(a.tokens?.resetMs).toBe(40_000)
    const r = refused(await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 300 }))
    expect(r.refusedBy).toBe('tpm')
    // 100 tokens short at 10 tokens/s
    expect(r.retryAfterMs).toBeGreaterThan(9_000)
    expect(r.retryAfterMs).toBeLessThanOrEqual(10_000)
  })

  it('refunds and charges the difference once, leaving the limit minus the real usage', async () => {
    const t = tenant()
    const a = id()
    await store.check({ tenant: t, requestId: a, limits, reserveTokens: 400 })
    const s = await store.settle({ tenant: t, requestId: a, limits, usedTokens: 100 })
    expect(s.settled).toBe(true)
    expect(s.tokens?.remaining).toBeGreaterThanOrEqual(500)
    expect(s.tokens?.remaining).toBeLessThanOrEqual(502)
    expect((await store.settle({ tenant: t, requestId: a, limits, usedTokens: 100 })).settled).toBe(false)

    const b = id()
    await store.check({ tenant: t, requestId: b, limits, reserveTokens: 100 })
    const c = await store.settle({ tenant: t, requestId: b, limits, usedTokens: 300 })
    // 600 - 100 - 300 (and a token or two of refill)
    expect(c.tokens?.remaining).toBeGreaterThanOrEqual(200)
    expect(c.tokens?.remaining).toBeLessThanOrEqual(205)
  })

  it('admits a reservation larger than the bucket only when full, and the same requestId once', async () => {
    const t = tenant()
    const big = id()
    expect((await store.check({ tenant: t, requestId: big, limits, reserveTokens: 1_000 })).allowed).toBe(
      true,
    )
    const again = await store.check({ tenant: t, requestId: big, limits, reserveTokens: 1_000 })
    expect(again.allowed).toBe(true)
    expect(again.tokens?.remaining).toBe(0)
    const r = refused(await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 1 }))
    // 400 of debt and 1 token needed, at 10 tokens/s
    expect(r.retryAfterMs).toBeGreaterThan(39_000)
    expect(r.retryAfterMs).toBeLessThanOrEqual(40_100)
  })
})

describe('redis store: leases and the daily budget', () => {
  it('holds a concurrency slot until settle or expiry, and renews it', async () => {
    const t = tenant()
    const limits: TenantLimits = { max_concurrent: 2 }
    const a = id()
    const b = id()
    await store.check({ tenant: t, requestId: a, limits, reserveTokens: 0, leaseMs: 1_000 })
    await store.check({ tenant: t, requestId: b, limits, reserveTokens: 0, leaseMs: 1_000 })
    const r = refused(await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 0 }))
    expect(r.refusedBy).toBe('max_concurrent')
    expect(r.retryAfterMs).toBeLessThanOrEqual(1_000)

    expect((await store.settle({ tenant: t, requestId: a, limits, usedTokens: 0 })).settled).toBe(true)
    expect(await store.renew({ tenant: t, requestId: b, leaseMs: 5_000 })).toBe(true)
    const c = id()
    expect(
      (await store.check({ tenant: t, requestId: c, limits, reserveTokens: 0, leaseMs: 1_000 })).allowed,
    ).toBe(true)
    await sleep(1_300)
    // c expired (as a crashed replica's would); b was renewed and holds its slot
    expect((await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 0 })).allowed).toBe(true)
    expect((await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 0 })).allowed).toBe(false)
    expect(await store.renew({ tenant: t, requestId: c })).toBe(false)
    expect((await store.settle({ tenant: t, requestId: c, limits, usedTokens: 0 })).settled).toBe(false)
  })

  it('refuses with budgetSpent once the day is charged, until UTC midnight; a refund reopens it', async () => {
    const t = tenant()
    const limits: TenantLimits = { daily_tokens: 1_000 }
    const a = id()
    expect((await store.check({ tenant: t, requestId: a, limits, reserveTokens: 600 })).allowed).toBe(true)
    expect((await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 600 })).allowed).toBe(true)
    const r = refused(await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 1 }))
    expect(r.refusedBy).toBe('daily_tokens')
    expect(r.budgetSpent).toBe(true)
    const toMidnight = DAY_MS - (Date.now() % DAY_MS)
    expect(Math.abs(r.retryAfterMs - toMidnight)).toBeLessThan(5_000)

    await store.settle({ tenant: t, requestId: a, limits, usedTokens: 300 })
    expect((await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 200 })).allowed).toBe(true)
    expect(
      refused(await store.check({ tenant: t, requestId: id(), limits, reserveTokens: 1 })).budgetSpent,
    ).toBe(true)
  })

  it("keeps a tenant's keys in one cluster slot ({tenant} hash tag), each with an expiry", async () => {
    const t = tenant()
    const limits: TenantLimits = { rpm: 10, tpm: 1_000, max_concurrent: 3, daily_tokens: 10_000 }
    await store.check({ tenant: t, requestId: 'k1', limits, reserveTokens: 10 })
    const keys = (await raw.keys(`*{${t}}*`)).sort()
    expect(keys).toEqual([`slo-gw:rl:{${t}}:l`, `slo-gw:rl:{${t}}:r:k1`, `slo-gw:rl:{${t}}:s`])
    for (const k of keys) expect(await raw.pttl(k), k).toBeGreaterThan(0)
  })
})

describe('redis store: two replicas share one limit', () => {
  it("two stores bursting at one tenant's 120 rpm admit within 2% of what the limit allows", async () => {
    const replicas = [
      new RedisStore({ url: server.url, timeoutMs: 1_000 }),
      new RedisStore({ url: server.url, timeoutMs: 1_000 }),
    ]
    await Promise.all(replicas.map((r) => r.ready()))
    const t = tenant()
    const limits: TenantLimits = { rpm: 120 } // a burst of 120, then one per 500 ms
    const durationMs = 5_000
    let admitted = 0
    let calls = 0
    const start = performance.now()
    const worker = async (r: RedisStore) => {
      while (performance.now() - start < durationMs) {
        calls++
        if ((await r.check({ tenant: t, requestId: id(), limits, reserveTokens: 0 })).allowed) admitted++
        await sleep(5)
      }
    }
    // four clients on each replica
    await Promise.all(replicas.flatMap((r) => [worker(r), worker(r), worker(r), worker(r)]))
    const elapsed = performance.now() - start
    await Promise.all(replicas.map((r) => r.close()))

    const allowed = 120 + elapsed / 500
    expect(calls).toBeGreaterThan(allowed * 2)
    expect(admitted).toBeLessThanOrEqual(Math.ceil(allowed) + 1)
    expect(admitted).toBeGreaterThanOrEqual(Math.floor(allowed * 0.98))
  })
})
