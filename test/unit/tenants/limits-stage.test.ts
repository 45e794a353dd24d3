/**
 * The limits stage on its own: what it reserves, that an unlimited tenant is passed
 * synchronously (no limiter call, no promise), that a store needing no I/O answers in the same
 * tick and one that does through its promise, what a failing store does (a fail-closed store
 * error is a 503, a bug lets the request through), that an admitted request's lease is
 * renewed while it is in flight, how a finished request is charged, and the x-ratelimit-*
 * duration format.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import type { StageDeps } from '../../../src/gateway-request.js'
import { TenantDirectory } from '../../../src/tenants/directory.js'
import type { CheckRequest, Limiter } from '../../../src/tenants/limiter.js'
import { LimiterStoreError } from '../../../src/tenants/limiter-errors.js'
import { limitsStage, settleTokens } from '../../../src/tenants/limits.js'
import { MemoryStore } from '../../../src/tenants/memory-store.js'
import { rateLimitHeaders, resetDuration } from '../../../src/tenants/ratelimit-headers.js'
import { Ticket } from '../../../src/ticket.js'
import { stageRequest } from '../../helpers/stage-request.js'

const config = configSchema.parse({
  tenants: [
    { id: 'capped', limits: { tpm: 100_000 } },
    { id: 'free', limits: {} },
  ],
  limits: { reserve_output_cap: 500 },
})

function stage(limiter: Limiter) {
  return limitsStage({
    tenants: TenantDirectory.fromConfig(config),
    limiter,
    limits: config.limits,
  } as unknown as StageDeps)
}

function requestOf(tenant: string) {
  const r = stageRequest('/v1/chat/completions', {})
  r.ticket.tenant = tenant
  r.ticket.promptTokens = 40
  r.ticket.expectedOutputTokens = 2000
  return r
}

class Recording extends MemoryStore {
  readonly checks: CheckRequest[] = []
  override checkNow(req: CheckRequest) {
    this.checks.push(req)
    return super.checkNow(req)
  }
}

/** A store as one with I/O is seen (Redis): it answers only through its promises. */
function asyncOnly(store: MemoryStore, check?: Limiter['check']): Limiter {
  return {
    name: store.name,
    check: check ?? ((req) => store.check(req)),
    settle: (req) => store.settle(req),
    renew: (req) => store.renew(req),
    usage: (tenant, limits) => store.usage(tenant, limits),
    close: () => store.close(),
  }
}

describe('limits stage', () => {
  it('passes a tenant without limits synchronously, without calling the limiter', () => {
    const limiter = new Recording()
    expect(stage(limiter)(requestOf('free'))).toBeUndefined()
    expect(limiter.checks).toHaveLength(0)
  })

  it('reserves the prompt plus min(expected output, reserve_output_cap), under an id of its own', async () => {
    const limiter = new Recording()
    const r = requestOf('capped')
    expect(await stage(limiter)(r)).toBeUndefined()
    expect(limiter.checks[0]).toMatchObject({ tenant: 'capped', reserveTokens: 540, leaseMs: 30_000 })
    expect(limiter.checks[0]!.requestId).not.toBe(r.ticket.id)
    expect(r.ticket.limiterLease?.id).toBe(limiter.checks[0]!.requestId)
    expect(r.ticket.rateTokens).toMatchObject({ limit: 100_000, remaining: 100_000 - 540 })
  })

  it('decides in the same tick with a store that needs no I/O (memory), through a promise with one that does', async () => {
    const sync = stage(new MemoryStore())(requestOf('capped'))
    expect(sync).toBeUndefined()
    const viaPromise = stage(asyncOnly(new MemoryStore()))(requestOf('capped'))
    expect(viaPromise).toBeInstanceOf(Promise)
    expect(await viaPromise).toBeUndefined()
  })

  it('refuses with 503 when the store error reaches it (fail_closed), retry in about a second', async () => {
    const storeError = () => new LimiterStoreError('LIMITER_ERR_TIMEOUT', 'redis', 'slow')
    const failing = asyncOnly(new MemoryStore(), () => Promise.reject(storeError()))
    const r = requestOf('capped')
    const out = await stage(failing)(r)
    expect(out).toMatchObject({ code: 'GW_ERR_LIMITER_UNAVAILABLE', status: 503, retryAfterMs: 1_000 })
    expect(r.ticket.limiterLease?.id).toBeUndefined()
    // the same from a store that answers at once
    const throwing = new MemoryStore()
    throwing.checkNow = () => {
      throw storeError()
    }
    const r2 = requestOf('capped')
    expect(stage(throwing)(r2)).toMatchObject({ code: 'GW_ERR_LIMITER_UNAVAILABLE', status: 503 })
    expect(r2.ticket.limiterLease?.id).toBeUndefined()
  })

  it("lets the request through when the limiter fails otherwise (a bug is not the tenant's fault)", async () => {
    const failing = asyncOnly(new MemoryStore(), () => Promise.reject(new TypeError('oops')))
    const r = requestOf('capped')
    expect(await stage(failing)(r)).toBeUndefined()
    expect(r.ticket.limiterLease?.id).toBeUndefined()
    const throwing = new MemoryStore()
    throwing.checkNow = () => {
      throw new TypeError('oops')
    }
    const r2 = requestOf('capped')
    expect(stage(throwing)(r2)).toBeUndefined()
    expect(r2.ticket.limiterLease?.id).toBeUndefined()
  })

  it('settles a finished request with the store as it answers: at once, or through its promise', async () => {
    // a clock that stands still: on the wall clock, 100,000 tokens a minute refill one
    // every 0.6 ms, and a loaded machine read 99,951
    const clock = new ManualClock()
    for (const limiter of [new MemoryStore({ clock }), asyncOnly(new MemoryStore({ clock }))]) {
      const r = requestOf('capped')
      await stage(limiter)(r)
      r.ticket.usage = { promptTokens: 40, completionTokens: 10 }
      r.exchange.end(undefined)
      await Promise.resolve()
      // charged the 50 tokens used instead of the 540 reserved
      const usage = await limiter.usage('capped', config.tenants[0]!.limits)
      expect(usage.tokens?.remaining).toBe(100_000 - 50)
      expect(usage.concurrent).toBe(0)
    }
  })

  describe('leases', () => {
    afterEach(() => {
      vi.useRealTimers()
    })

    it('renews an in-flight request every lease_ms / 3 and stops once it settles', async () => {
      vi.useFakeTimers()
      const limiter = new Recording()
      const renewed: string[] = []
      limiter.renew = async (req) => {
        renewed.push(req.requestId)
        return true
      }
      const r = requestOf('capped')
      expect(await stage(limiter)(r)).toBeUndefined()
      const id = r.ticket.limiterLease!.id
      vi.advanceTimersByTime(9_999)
      expect(renewed).toEqual([])
      vi.advanceTimersByTime(1)
      expect(renewed).toEqual([id])
      vi.advanceTimersByTime(20_000)
      expect(renewed).toEqual([id, id, id])
      r.exchange.end(undefined)
      vi.advanceTimersByTime(60_000)
      expect(renewed).toHaveLength(3)
      expect(vi.getTimerCount()).toBe(0)
    })
  })
})

describe('settleTokens', () => {
  const ticket = () => {
    const t = new Ticket('t', 'POST', '/v1/chat/completions', 0)
    t.promptTokens = 30
    t.limiterLease = {
      slot: -1,
      id: 'run:1',
      tenant: TenantDirectory.fromConfig(config).get('capped')!,
      reserved: 530,
    }
    return t
  }
  it('charges the real usage when it was reported', () => {
    const t = ticket()
    t.dispatchedAt = 1
    t.usage = { promptTokens: 25, completionTokens: 7 }
    expect(settleTokens(t)).toBe(32)
  })
  it('charges nothing for a request never sent', () => {
    expect(settleTokens(ticket())).toBe(0)
  })
  it('charges a stream cut short its prompt and the chunks relayed, a whole response its reservation', () => {
    const t = ticket()
    t.dispatchedAt = 1
    expect(settleTokens(t)).toBe(530)
    t.stream = true
    t.contentChunks = 4
    expect(settleTokens(t)).toBe(34)
  })
})

describe('x-ratelimit-* headers', () => {
  it('writes resets as OpenAI does', () => {
    expect(resetDuration(0)).toBe('0s')
    expect(resetDuration(17.2)).toBe('18ms')
    expect(resetDuration(1000)).toBe('1s')
    expect(resetDuration(1500)).toBe('1.5s')
    expect(resetDuration(360_000)).toBe('6m0s')
    expect(resetDuration(59_999)).toBe('59.999s')
    expect(resetDuration(3_723_000)).toBe('1h2m3s')
  })
  it('sends only the limits the tenant has', () => {
    expect(rateLimitHeaders({ limit: 60, remaining: 59.7, resetMs: 1000 }, undefined)).toEqual({
      'x-ratelimit-limit-requests': '60',
      'x-ratelimit-remaining-requests': '59',
      'x-ratelimit-reset-requests': '1s',
    })
  })
})
