/**
 * The Redis limiter store when Redis is slow, stopped and back: every call fails fast with
 * a LimiterStoreError the caller can act on (fail-open or fail-closed), none hangs, and
 * calls work again once ioredis has reconnected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TenantLimits } from '../../../src/tenants/limiter.js'
import { LimiterStoreError } from '../../../src/tenants/limiter-errors.js'
import { RedisStore } from '../../../src/tenants/redis-store.js'
import { freePort, type RedisServer, startRedis } from '../../helpers/redis.js'

let server: RedisServer
let store: RedisStore
const errors: Error[] = []
const changes: boolean[] = []

beforeAll(async () => {
  server = await startRedis()
  // the default per-call timeout, 50 ms
  store = new RedisStore({
    url: server.url,
    onError: (e) => errors.push(e),
    onConnectionChange: (up) => changes.push(up),
  })
  await store.ready()
})

afterAll(async () => {
  await store?.close()
  await server?.stop()
})

let seq = 0
const limits: TenantLimits = { rpm: 1_000, tpm: 100_000, max_concurrent: 100 }
const check = () => store.check({ tenant: 'outage', requestId: `r${++seq}`, limits, reserveTokens: 10 })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Runs `fn`, which must reject with a LimiterStoreError; returns its code and how long it took. */
async function failure(fn: () => Promise<unknown>): Promise<{ code: string; ms: number }> {
  const start = performance.now()
  try {
    await fn()
  } catch (err) {
    expect(err).toBeInstanceOf(LimiterStoreError)
    return { code: (err as LimiterStoreError).code, ms: performance.now() - start }
  }
  throw new Error('expected the call to fail')
}

describe('redis store under trouble', () => {
  it('a wedged Redis: the call times out (LIMITER_ERR_TIMEOUT) instead of waiting for it', async () => {
    expect((await check()).allowed).toBe(true)
    server.pause()
    try {
      for (let i = 0; i < 3; i++) {
        const f = await failure(check)
        expect(f.code).toBe('LIMITER_ERR_TIMEOUT')
        expect(f.ms).toBeLessThan(500)
      }
    } finally {
      server.resume()
    }
    expect((await check()).allowed).toBe(true)
  })

  it('Redis stopped: every call fails well under a second; restarted: calls work again', async () => {
    expect((await check()).allowed).toBe(true)
    await server.stop()
    const codes = new Set<string>()
    const stoppedAt = performance.now()
    while (performance.now() - stoppedAt < 1_500) {
      for (const op of [
        check,
        () => store.settle({ tenant: 'outage', requestId: 'r1', limits, usedTokens: 1 }),
        () => store.renew({ tenant: 'outage', requestId: 'r1' }),
      ]) {
        const f = await failure(op)
        expect(f.ms).toBeLessThan(500)
        codes.add(f.code)
      }
      await sleep(50)
    }
    // not connected: refused at once, never queued
    expect(codes.has('LIMITER_ERR_UNAVAILABLE')).toBe(true)
    for (const c of codes) expect(['LIMITER_ERR_UNAVAILABLE', 'LIMITER_ERR_TIMEOUT']).toContain(c)
    expect(store.connected).toBe(false)
    expect(errors.length).toBeGreaterThan(0)
    expect(changes).toEqual([true, false])

    await server.start()
    await store.ready(10_000)
    expect(store.connected).toBe(true)
    expect(changes).toEqual([true, false, true])
    // the restarted server has no scripts cached: EVALSHA falls back to EVAL
    expect((await check()).allowed).toBe(true)
  })

  it('a Redis that was never there: calls fail at once, never queued', async () => {
    const lonely = new RedisStore({ url: `redis://127.0.0.1:${await freePort()}`, connectTimeoutMs: 200 })
    try {
      for (let i = 0; i < 3; i++) {
        const f = await failure(() =>
          lonely.check({ tenant: 'x', requestId: `n${i}`, limits, reserveTokens: 1 }),
        )
        expect(f.code).toBe('LIMITER_ERR_UNAVAILABLE')
        expect(f.ms).toBeLessThan(500)
      }
      await expect(lonely.ready(300)).rejects.toMatchObject({ code: 'LIMITER_ERR_UNAVAILABLE' })
    } finally {
      await lonely.close()
    }
  })
})
