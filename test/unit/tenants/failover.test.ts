/**
 * The Redis store's failover on its own, with a scripted primary: fail_open checks against
 * this replica's share (the limit / replicas, learned from heartbeats or configured), settles
 * where it admitted, signals degraded mode once per change and heals with the next answer;
 * fail_closed passes the store error on.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src/clock.js'
import { FailoverLimiter, type SharedStore, shareOf } from '../../../src/tenants/failover.js'
import type { CheckRequest, TenantLimits } from '../../../src/tenants/limiter.js'
import { LimiterStoreError } from '../../../src/tenants/limiter-errors.js'
import { MemoryStore } from '../../../src/tenants/memory-store.js'

/** A memory store standing in for Redis, that can be taken down. */
class FlakyStore extends MemoryStore implements SharedStore {
  down = false
  replicas = 3
  get connected() {
    return !this.down
  }
  calls = 0
  private fail<T>(f: () => Promise<T>): Promise<T> {
    this.calls++
    if (this.down) return Promise.reject(new LimiterStoreError('LIMITER_ERR_UNAVAILABLE', 'redis', 'down'))
    return f()
  }
  /** Wedged as Redis under SIGSTOP: a check is applied, but only after its caller timed out. */
  late = false
  override check(req: CheckRequest) {
    if (this.late) {
      this.calls++
      return super.check(req).then(() => {
        throw new LimiterStoreError('LIMITER_ERR_TIMEOUT', 'redis', 'timed out')
      })
    }
    return this.fail(() => super.check(req))
  }
  override settle(req: Parameters<MemoryStore['settle']>[0]) {
    return this.fail(() => super.settle(req))
  }
  async ready() {}
  heartbeat(): Promise<number> {
    return this.fail(async () => this.replicas)
  }
}

const limits: TenantLimits = { rpm: 30, max_concurrent: 9 }
let seq = 0
const req = (): CheckRequest => ({ tenant: 't', requestId: `r${++seq}`, limits, reserveTokens: 10 })
const flush = () => new Promise((r) => setTimeout(r, 30))

const made: FailoverLimiter[] = []
afterEach(async () => {
  await Promise.all(made.splice(0).map((l) => l.close()))
})

function failover(primary: FlakyStore, policy: 'fail_open' | 'fail_closed', replicas?: number) {
  const events: string[] = []
  const l = new FailoverLimiter({
    primary,
    policy,
    replicaId: 'me',
    replicas,
    clock: new ManualClock(0),
    heartbeatMs: 10,
    signals: {
      storeError: (store, code) => events.push(`${store} ${code}`),
      degraded: (_s, on) => events.push(on ? 'degraded' : 'healed'),
    },
  })
  made.push(l)
  return { l, events }
}

describe('shareOf', () => {
  it('divides every limit, rounding down, never below 1', () => {
    expect(shareOf({ rpm: 120, tpm: 1000, max_concurrent: 2, daily_tokens: 7 }, 3)).toEqual({
      rpm: 40,
      tpm: 333,
      max_concurrent: 1,
      daily_tokens: 2,
    })
    const l = { rpm: 5 }
    expect(shareOf(l, 1)).toBe(l)
  })
})

describe('FailoverLimiter', () => {
  it('learns the replica count from its heartbeat and, with Redis down, admits only its share', async () => {
    const primary = new FlakyStore()
    const { l, events } = failover(primary, 'fail_open')
    await flush()
    expect(l.replicas).toBe(3)
    primary.down = true
    // max_concurrent 9 over 3 replicas: 3 here; rpm 30 / 3 = 10 would allow more
    const decisions = await Promise.all(Array.from({ length: 5 }, () => l.check(req())))
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false])
    expect(decisions[3]).toMatchObject({ allowed: false, refusedBy: 'max_concurrent' })
    expect(l.degraded).toBe(true)
    expect(events.filter((e) => e === 'degraded')).toHaveLength(1)
    expect(events).toContain('redis LIMITER_ERR_UNAVAILABLE')
  })

  it('settles a locally admitted request locally, after Redis came back too', async () => {
    const primary = new FlakyStore()
    const { l, events } = failover(primary, 'fail_open', 9)
    primary.down = true
    const r = req()
    expect((await l.check(r)).allowed).toBe(true)
    primary.down = false
    const before = primary.calls
    const s = await l.settle({ tenant: 't', requestId: r.requestId, limits, usedTokens: 5 })
    expect(s.settled).toBe(true)
    expect(primary.calls).toBe(before)
    // the next heartbeat heals; checks go to Redis again
    await flush()
    expect(l.degraded).toBe(false)
    expect(events.slice(-1)).toEqual(['healed'])
    const calls = primary.calls
    expect((await l.check(req())).allowed).toBe(true)
    expect(primary.calls).toBe(calls + 1)
  })

  it('passes a store error on under fail_closed, and counts it', async () => {
    const primary = new FlakyStore()
    const { l, events } = failover(primary, 'fail_closed')
    await flush()
    primary.down = true
    await expect(l.check(req())).rejects.toBeInstanceOf(LimiterStoreError)
    expect(events).toEqual(['redis LIMITER_ERR_UNAVAILABLE', 'degraded'])
    // degraded, a check does not wait on the store again
    const calls = primary.calls
    await expect(l.check(req())).rejects.toBeInstanceOf(LimiterStoreError)
    expect(primary.calls).toBe(calls)
  })

  it('releases in the store what a timed-out check took there, and owes a failed settle until it answers', async () => {
    const primary = new FlakyStore()
    const { l } = failover(primary, 'fail_open', 1)
    const usage = async () => (await primary.usage('t', limits)).concurrent
    // a check that times out but lands: the store holds a lease the request will never settle there
    primary.late = true
    const r = req()
    expect((await l.check(r)).allowed).toBe(true)
    primary.late = false
    await flush()
    expect(await usage()).toBe(0)
    expect(l.describe()).toMatchObject({ localLeases: 1 })
    expect((await l.settle({ tenant: 't', requestId: r.requestId, limits, usedTokens: 3 })).settled).toBe(
      true,
    )
    // a shared lease whose settle fails (the store down): owed, then sent once it answers
    await flush()
    const s = req()
    expect((await l.check(s)).allowed).toBe(true)
    expect(await usage()).toBe(1)
    primary.down = true
    await expect(l.settle({ tenant: 't', requestId: s.requestId, limits, usedTokens: 3 })).rejects.toThrow()
    expect(l.describe()).toMatchObject({ pendingSettles: 1 })
    expect(await usage()).toBe(1)
    primary.down = false
    await flush()
    expect(await usage()).toBe(0)
    expect(l.describe()).toMatchObject({ pendingSettles: 0, localLeases: 0 })
  })

  it('keeps the shared answer while Redis answers', async () => {
    const primary = new FlakyStore()
    const { l } = failover(primary, 'fail_open')
    await flush()
    const decisions = await Promise.all(Array.from({ length: 10 }, () => l.check(req())))
    expect(decisions.filter((d) => d.allowed)).toHaveLength(9)
    expect(l.degraded).toBe(false)
  })
})
