import { describe, expect, it } from 'vitest'
import { type BlockHolder, KvBlockManager } from '../../../src/sim/kv-block-manager.js'

const holder = (): BlockHolder => ({ numBlocks: 0, cached: [] })

describe('KvBlockManager', () => {
  it('allocates blocks as tokens are computed and refuses what it cannot supply', () => {
    const kv = new KvBlockManager(10, 16)
    const a = holder()
    expect(kv.allocate(a, 16)).toBe(true)
    expect(kv.usedBlocks).toBe(1)
    expect(kv.allocate(a, 17)).toBe(true)
    expect(kv.usedBlocks).toBe(2)
    expect(kv.allocate(a, 32)).toBe(true) // still 2 blocks
    expect(kv.usedBlocks).toBe(2)
    const b = holder()
    expect(kv.allocate(b, 16 * 9)).toBe(false)
    expect(kv.usedBlocks).toBe(2)
    expect(kv.allocate(b, 16 * 8)).toBe(true)
    expect(kv.usage).toBe(1)
    kv.free(a)
    expect(kv.usedBlocks).toBe(8)
    expect(a.numBlocks).toBe(0)
  })

  it('keeps freed prefix blocks cached (counted free) and evicts the oldest when fresh blocks run out', () => {
    const kv = new KvBlockManager(4, 16)
    const a = holder()
    kv.allocate(a, 48)
    kv.register(a, 'x0')
    kv.register(a, 'x1')
    expect(kv.usedBlocks).toBe(3)
    kv.free(a)
    expect(kv.usedBlocks).toBe(0)
    expect(kv.cachedBlocks).toBe(2)
    const b = holder()
    expect(kv.acquirePrefix(b, ['x0', 'x1', 'x2'], 3)).toBe(2)
    expect(kv.usedBlocks).toBe(2)
    kv.free(b)
    const c = holder()
    expect(kv.allocate(c, 64)).toBe(true) // needs all 4: both cached blocks are evicted
    expect(kv.cachedBlocks).toBe(0)
  })

  it('shares a block two sequences computed with the same content', () => {
    const kv = new KvBlockManager(8, 16)
    const a = holder()
    const b = holder()
    kv.allocate(a, 16)
    kv.allocate(b, 16)
    kv.register(a, 'p0')
    kv.register(b, 'p0')
    expect(kv.usedBlocks).toBe(1)
    kv.free(a)
    expect(kv.usedBlocks).toBe(1)
    kv.free(b)
    expect(kv.usedBlocks).toBe(0)
  })
})
