import { describe, expect, it } from 'vitest'
import { EndpointPrefixCache } from '../../../src/backends/endpoint-prefix-cache.js'
import { LruPrefixIndex } from '../../../src/backends/lru-prefix-index.js'
import { MIN_QUERY_TOKENS, PrefixCalibration } from '../../../src/backends/prefix-calibration.js'
import { cachedTokens, type PromptBlocks } from '../../../src/backends/prefix-index.js'

/**
 * Blocks with given hashes (distinct numbers stand in for chained hashes: after a block that
 * differs, every later one differs too, as block i's hash covers blocks 0..i).
 */
function blocks(hashes: number[], geometry = '16x4', extraUnits = 0): PromptBlocks {
  return {
    geometry,
    hashes: Float64Array.from(hashes),
    count: hashes.length,
    unitsPerBlock: 64,
    totalUnits: hashes.length * 64 + extraUnits,
  }
}
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i)

describe('LRU prefix index', () => {
  it('matches the leading run of blocks it was sent, and stops at the first it was not', () => {
    const ix = new LruPrefixIndex(1000)
    ix.record(blocks(range(1, 10)))
    expect(ix.match(blocks(range(1, 10)))).toBe(10)
    expect(ix.match(blocks([...range(1, 6), 99, 107, 108]))).toBe(6)
    expect(ix.match(blocks([99, ...range(102, 5)]))).toBe(0)
    expect(ix.match(blocks(range(1, 4)))).toBe(4)
    expect(ix.size).toBe(10)
    expect(ix.match(blocks(range(1, 10), '16x3.5'))).toBe(0) // another cut never compares
  })

  it('matches what a block-by-block scan matches, for prompts of chained blocks, whatever was sent and evicted', () => {
    // prompts that share heads and diverge, as conversations and shared system prompts do;
    // each block's hash a chain over the prompt's "tokens", as prompt-blocks.ts makes them
    const chained = (tokens: number[]) => {
      let h = 17
      return blocks(tokens.map((t) => (h = (Math.imul(h ^ t, 0x5bd1e995) >>> 0) + 1)))
    }
    let seed = 7
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      return (seed >>> 16) % n
    }
    const linear = (ix: LruPrefixIndex, p: PromptBlocks) => {
      let n = 0
      while (n < p.count && ix.match({ ...p, count: n + 1 }) === n + 1) n++
      return n
    }
    const heads = Array.from({ length: 6 }, () => Array.from({ length: 1 + rand(20) }, () => rand(4)))
    const prompt = () => [...heads[rand(heads.length)]!, ...Array.from({ length: rand(30) }, () => rand(3))]
    let partial = 0
    for (const cap of [5, 40, 400]) {
      const ix = new LruPrefixIndex(cap)
      for (let step = 0; step < 2000; step++) {
        const p = chained(prompt())
        if (rand(2) === 0) ix.record(p)
        else {
          const n = linear(ix, p)
          expect(ix.match(p)).toBe(n)
          partial += n > 3 && n < p.count ? 1 : 0
        }
      }
    }
    expect(partial).toBeGreaterThan(100) // the runs that end inside a prompt were tried
  })

  it('stays within its capacity in blocks, forgetting the least recently sent first', () => {
    const ix = new LruPrefixIndex(100)
    for (let p = 0; p < 1000; p++) ix.record(blocks(range(p * 1000, 30)))
    expect(ix.size).toBe(100)
    // the last prompts are remembered whole, the older ones not at all
    expect(ix.match(blocks(range(999 * 1000, 30)))).toBe(30)
    expect(ix.match(blocks(range(990 * 1000, 30)))).toBe(0)
    ix.setCapacity(10)
    expect(ix.size).toBe(10)
    ix.clear()
    expect(ix.size).toBe(0)
  })

  it('keeps the head of a prompt longest, as a server evicts a freed sequence from its tail', () => {
    const ix = new LruPrefixIndex(40)
    ix.record(blocks(range(1, 30)))
    ix.record(blocks(range(1000, 20))) // 50 blocks sent, 40 kept: 10 of the first prompt go
    expect(ix.size).toBe(40)
    expect(ix.match(blocks(range(1, 30)))).toBe(20) // its first 20 blocks survive
    // re-sending refreshes: the shared head is now the most recent
    ix.record(blocks(range(1, 5)))
    ix.record(blocks(range(2000, 35)))
    expect(ix.match(blocks(range(1, 30)))).toBe(5)
  })

  it('forgets everything when the cut changes (the hashes of another cut mean nothing)', () => {
    const ix = new LruPrefixIndex(100)
    ix.record(blocks(range(1, 10)))
    ix.record(blocks(range(500, 5), '16x3.5'))
    expect(ix.size).toBe(5)
    expect(ix.match(blocks(range(1, 10)))).toBe(0)
  })
})

describe('effective prompt tokens', () => {
  it('counts the matched share of the prompt, in whole engine blocks, never the last token', () => {
    const b = blocks(range(1, 10), '16x4', 32) // 10 full blocks + half a block = 672 units
    // 168 tokens by the estimate; 6 of 10.5 blocks matched: 96 tokens, whole blocks of 16
    expect(cachedTokens(b, 6, 168, 16)).toBe(96)
    expect(168 - cachedTokens(b, 6, 168, 16)).toBe(72) // what the server computes
    expect(cachedTokens(b, 0, 168, 16)).toBe(0)
    // a full match still leaves at least the last token (here the last, partial block) to compute
    expect(cachedTokens(b, 10, 168, 16)).toBe(160)
    expect(cachedTokens(blocks(range(1, 10)), 10, 160, 16)).toBe(144)
    // trust scales the expectation, rounded down to blocks; it never exceeds 1
    expect(cachedTokens(b, 10, 168, 16, 0.5)).toBe(80)
    expect(cachedTokens(b, 10, 168, 16, 2)).toBe(160)
    expect(cachedTokens(b, 10, 168, 16, 0)).toBe(0)
    // the share applies to the current token estimate, whatever the ratio at the cut
    expect(cachedTokens(b, 6, 336, 16)).toBe(192)
  })
})

describe('prefix calibration', () => {
  it('trusts the index (1) until both sides hold evidence', () => {
    const c = new PrefixCalibration()
    expect(c.trust).toBe(1)
    c.scraped(0, 0)
    c.sent(1000, 800)
    c.scraped(500, 0) // too little measured yet
    expect(c.calibrated).toBe(false)
    expect(c.trust).toBe(1)
  })

  it('trusts the measured ratio over the predicted one, at most 1', () => {
    const c = new PrefixCalibration()
    let q = 0
    let h = 0
    c.scraped(q, h)
    for (let i = 0; i < 30; i++) {
      c.sent(10_000, 8_000) // the index predicts 80% hits
      q += 10_000
      h += 4_000 // the engine hits 40%
      c.scraped(q, h)
    }
    expect(c.calibrated).toBe(true)
    expect(c.predictedRatio).toBeCloseTo(0.8, 6)
    expect(c.measuredRatio).toBeCloseTo(0.4, 6)
    expect(c.trust).toBeCloseTo(0.5, 6)
    // the engine catches more than predicted (others' prefixes): trust stays at 1
    for (let i = 0; i < 60; i++) {
      c.sent(10_000, 2_000)
      q += 10_000
      h += 9_000
      c.scraped(q, h)
    }
    expect(c.trust).toBe(1)
  })

  it('an engine whose cache is off (no hits) drives trust to 0; idle scrapes keep the evidence', () => {
    const c = new PrefixCalibration()
    let q = 0
    c.scraped(0, 0)
    for (let i = 0; i < 10; i++) {
      c.sent(MIN_QUERY_TOKENS, MIN_QUERY_TOKENS / 2)
      q += MIN_QUERY_TOKENS
      c.scraped(q, 0)
    }
    expect(c.trust).toBe(0)
    for (let i = 0; i < 100; i++) c.scraped(q, 0) // idle
    expect(c.trust).toBe(0)
  })

  it('a counter going backwards is a restart: the evidence starts again', () => {
    const c = new PrefixCalibration()
    c.scraped(0, 0)
    for (let i = 1; i <= 10; i++) {
      c.sent(10_000, 8_000)
      c.scraped(i * 10_000, 0)
    }
    expect(c.trust).toBe(0)
    expect(c.scraped(50, 0)).toBe(true)
    expect(c.calibrated).toBe(false)
    expect(c.trust).toBe(1)
  })
})

describe('endpoint prefix cache', () => {
  it('takes block size, capacity and on/off from the engine, and forgets on a restart', () => {
    const pc = new EndpointPrefixCache(64_000) // capacity.kv_tokens from the pool config
    expect(pc.blockSize).toBe(16)
    expect(pc.index.capacity).toBe(4_000)
    pc.scraped({ waiting: 0, running: 0, kvCapacityTokens: 32_000, blockSize: 32 })
    expect(pc.blockSize).toBe(32)
    expect(pc.index.capacity).toBe(1_000)
    const b = blocks(range(1, 20))
    pc.sent(b, 320, 0)
    expect(pc.expectedHit(b, 320)).toEqual({ raw: 288, cached: 288 }) // 9 whole blocks of 32
    pc.scraped({ waiting: 0, running: 0, prefixCacheQueriesTotal: 100, prefixCacheHitsTotal: 0 })
    pc.scraped({ waiting: 0, running: 0, prefixCacheQueriesTotal: 10, prefixCacheHitsTotal: 0 })
    expect(pc.index.size).toBe(0) // restarted: its cache is empty
    pc.sent(b, 320, 0)
    pc.scraped({ waiting: 0, running: 0, prefixCaching: false })
    expect(pc.expectedHit(b, 320)).toEqual({ raw: 0, cached: 0 })
    expect(pc.state()).toMatchObject({
      enabled: false,
      blockSize: 32,
      indexBlocks: 20,
      capacityFrom: 'engine',
    })
  })
})
