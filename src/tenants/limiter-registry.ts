/**
 * Limiter stores by name (the config's choice of store, later). Adding one: a file beside
 * this one implementing Limiter (limiter.ts), and a line here with its options type.
 */
import type { Limiter } from './limiter.js'
import { MemoryStore, type MemoryStoreOptions } from './memory-store.js'
import { RedisStore, type RedisStoreOptions } from './redis-store.js'

/** Each store's name and the options it is built from. */
export interface LimiterStoreOptions {
  memory: MemoryStoreOptions
  redis: RedisStoreOptions
}

export type LimiterStoreName = keyof LimiterStoreOptions

const STORES: { [K in LimiterStoreName]: (opts: LimiterStoreOptions[K]) => Limiter } = {
  memory: (opts) => new MemoryStore(opts),
  redis: (opts) => new RedisStore(opts),
}

export function createLimiter<K extends LimiterStoreName>(name: K, opts: LimiterStoreOptions[K]): Limiter {
  const make = STORES[name] as (o: LimiterStoreOptions[K]) => Limiter
  return make(opts)
}

export const limiterStoreNames = Object.keys(STORES) as LimiterStoreName[]
