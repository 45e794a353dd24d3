/** Limiter stores by name, and how a Redis failure becomes a LimiterStoreError code. */
import { describe, expect, it } from 'vitest'
import { LimiterStoreError, redisStoreError } from '../../../src/tenants/limiter-errors.js'
import { createLimiter, limiterStoreNames } from '../../../src/tenants/limiter-registry.js'

describe('limiter registry', () => {
  it('names both stores and builds one by name', async () => {
    expect(limiterStoreNames).toEqual(['memory', 'redis'])
    const l = createLimiter('memory', {})
    expect(l.name).toBe('memory')
    const d = await l.check({ tenant: 't', requestId: 'a', limits: { rpm: 1 }, reserveTokens: 5 })
    expect(d.allowed).toBe(true)
    expect(
      (await l.check({ tenant: 't', requestId: 'b', limits: { rpm: 1 }, reserveTokens: 5 })).allowed,
    ).toBe(false)
    await l.close()
  })
})

describe('redisStoreError', () => {
  const replyError = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' })

  it('tells a timeout, an unavailable server and a bad reply apart, keeping the cause', () => {
    const timeout = new Error('Command timed out')
    const e = redisStoreError(timeout)
    expect(e).toBeInstanceOf(LimiterStoreError)
    expect(e.code).toBe('LIMITER_ERR_TIMEOUT')
    expect(e.store).toBe('redis')
    expect(e.cause).toBe(timeout)
    expect(
      redisStoreError(new Error("Stream isn't writeable and enableOfflineQueue options is false")).code,
    ).toBe('LIMITER_ERR_UNAVAILABLE')
    expect(redisStoreError(new Error('Connection is closed.')).code).toBe('LIMITER_ERR_UNAVAILABLE')
    expect(redisStoreError(replyError('LOADING Redis is loading the dataset in memory')).code).toBe(
      'LIMITER_ERR_UNAVAILABLE',
    )
    expect(redisStoreError(replyError('ERR user_script:3: attempt to compare nil')).code).toBe(
      'LIMITER_ERR_REPLY',
    )
    expect(redisStoreError(e)).toBe(e)
  })
})
