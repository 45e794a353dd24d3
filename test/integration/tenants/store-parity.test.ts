/**
 * The Lua mirrors the memory store: one seeded sequence of checks, settles and renews on
 * both stores gives the same decisions and the same remaining requests and tokens. The
 * memory store's clock stands still; the limits refill slowly enough (an emission interval
 * of 1 s or more, a token per 650 ms or slower) that the time Redis's clock moves during a
 * run (about 100 ms; well under that on a loaded machine) cannot flip a decision; waits and
 * resets are compared within a second. Each set of limits makes a different limit refuse.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src/clock.js'
import type { LimitDecision, LimitName, TenantLimits } from '../../../src/tenants/limiter.js'
import { MemoryStore } from '../../../src/tenants/memory-store.js'
import { RedisStore } from '../../../src/tenants/redis-store.js'
import { type RedisServer, startRedis } from '../../helpers/redis.js'

let server: RedisServer
let redis: RedisStore

beforeAll(async () => {
  server = await startRedis()
  redis = new RedisStore({ url: server.url, timeoutMs: 1_000 })
  await redis.ready()
})

afterAll(async () => {
  await redis?.close()
  await server?.stop()
})

/** mulberry32: a small seeded generator, so a failure replays. */
function rng(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

function comparable(d: LimitDecision) {
  return {
    allowed: d.allowed,
    refusedBy: d.allowed ? undefined : d.refusedBy,
    budgetSpent: d.allowed ? undefined : d.budgetSpent,
    requestsRemaining: d.requests?.remaining,
    tokensRemaining: d.tokens?.remaining,
  }
}

const near = (a: number | undefined, b: number | undefined, what: string) => {
  expect(a === undefined, what).toBe(b === undefined)
  if (a !== undefined && b !== undefined)
    expect(Math.abs(a - b), `${what}: ${a} vs ${b}`).toBeLessThanOrEqual(1_000)
}

const CASES: [string, number, TenantLimits, LimitName[]][] = [
  ['rpm and max_concurrent', 1, { rpm: 30, max_concurrent: 4, daily_tokens: 150 }, ['rpm', 'max_concurrent']],
  ['tpm and max_concurrent', 2, { rpm: 60, tpm: 80, max_concurrent: 5 }, ['tpm', 'max_concurrent']],
  ['daily_tokens', 3, { rpm: 50, tpm: 90, daily_tokens: 60 }, ['daily_tokens']],
]

describe('memory and Redis stores agree', () => {
  it.each(CASES)('on 150 seeded operations refused mostly by %s', async (_, seed, limits, expected) => {
    const clock = new ManualClock(Date.now())
    const memory = new MemoryStore({ clock, wallClock: clock })
    const random = rng(seed)
    const tenant = `parity-${seed}-${Date.now()}`
    const refusedBy = new Set<string>()
    let admitted = 0
    const held: string[] = []
    let n = 0
    for (let i = 0; i < 150; i++) {
      const op = random()
      if (op < 0.55 || held.length === 0) {
        const req = { tenant, requestId: `${seed}-${n++}`, limits, reserveTokens: Math.floor(random() * 8) }
        const [m, r] = await Promise.all([memory.check(req), redis.check(req)])
        expect(comparable(r), `op ${i}: check ${JSON.stringify(req)}`).toEqual(comparable(m))
        near(r.allowed ? 0 : r.retryAfterMs, m.allowed ? 0 : m.retryAfterMs, `op ${i} retryAfterMs`)
        near(r.requests?.resetMs, m.requests?.resetMs, `op ${i} requests.resetMs`)
        near(r.tokens?.resetMs, m.tokens?.resetMs, `op ${i} tokens.resetMs`)
        if (m.allowed) {
          held.push(req.requestId)
          admitted++
        } else refusedBy.add(m.refusedBy)
      } else if (op < 0.9) {
        const requestId = held.splice(Math.floor(random() * held.length), 1)[0]!
        // sometimes settled twice: the second changes nothing
        const times = random() < 0.2 ? 2 : 1
        const req = { tenant, requestId, limits, usedTokens: Math.floor(random() * 10) }
        for (let k = 0; k < times; k++) {
          const [m, r] = await Promise.all([memory.settle(req), redis.settle(req)])
          expect(r.settled, `op ${i}: settle`).toBe(m.settled)
          expect(r.tokens?.remaining, `op ${i}: settle remaining`).toBe(m.tokens?.remaining)
        }
      } else {
        const req = { tenant, requestId: held[Math.floor(random() * held.length)]! }
        const [m, r] = await Promise.all([memory.renew(req), redis.renew(req)])
        expect(r, `op ${i}: renew`).toBe(m)
      }
    }
    // the sequence exercised what it is named for
    expect(admitted).toBeGreaterThan(10)
    for (const limit of expected) expect(refusedBy).toContain(limit)
  })
})
