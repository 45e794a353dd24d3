import { describe, expect, it } from 'vitest'
import { ModelRouter } from '../../../src/backends/router.js'
import type { BackendPool } from '../../../src/backends/types.js'
import type { PoolConfig } from '../../../src/config/schema.js'

const pool = (name: string, models: string[], aliases: string[] = []): BackendPool => ({
  name,
  config: { name, models, aliases } as unknown as PoolConfig,
  endpoints: () => [],
  acquire: () => undefined,
  views: () => [],
  retryAfterMs: () => 0,
})

describe('ModelRouter', () => {
  const a = pool('a', ['llama-8b', 'llama-8b-instruct'], ['fast'])
  const b = pool('b', ['qwen-32b'], ['smart'])
  const any = pool('any', ['*'])

  it('routes by exact name, then alias, then the * pool', () => {
    const r = new ModelRouter([a, b, any])
    expect(r.route('llama-8b-instruct')).toBe(a)
    expect(r.route('smart')).toBe(b)
    expect(r.route('gpt-4o')).toBe(any)
    expect(r.route(undefined)).toBe(any)
  })

  it('has no answer for an unknown model without a * pool', () => {
    const r = new ModelRouter([a, b])
    expect(r.route('gpt-4o')).toBeUndefined()
    expect(r.route(undefined)).toBeUndefined()
    expect(new ModelRouter([a]).route(undefined)).toBe(a)
  })

  it('lists models and aliases for /v1/models, never *', () => {
    expect(new ModelRouter([a, b, any]).modelIds()).toEqual([
      'llama-8b',
      'llama-8b-instruct',
      'fast',
      'qwen-32b',
      'smart',
    ])
  })
})
