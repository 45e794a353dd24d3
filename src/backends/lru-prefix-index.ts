/**
 * The PrefixIndex of one endpoint: an LRU of block hashes, bounded by the endpoint's KV
 * capacity in blocks (a server cannot hold more, and evicts the least recently used free
 * blocks first, as this does).
 *
 * A Map keeps insertion order, so deleting and re-inserting a key moves it to the most
 * recent end, and the first key is the least recently used: O(1) per block, no allocation
 * per block (the keys are numbers).
 */
import type { PrefixIndex, PromptBlocks } from './prefix-index.js'

/** Blocks remembered when the endpoint's KV capacity is unknown (a million tokens of 16). */
export const DEFAULT_INDEX_BLOCKS = 65_536

export class LruPrefixIndex implements PrefixIndex {
  private readonly blocks = new Map<number, true>()
  private geometry: string | undefined = undefined
  private cap: number

  constructor(capacity = DEFAULT_INDEX_BLOCKS) {
    this.cap = Math.max(1, Math.floor(capacity))
  }

  get size(): number {
    return this.blocks.size
  }

  get capacity(): number {
    return this.cap
  }

  setCapacity(blocks: number): void {
    if (!(blocks >= 1)) return
    this.cap = Math.floor(blocks)
    this.evict()
  }

  match(p: PromptBlocks): number {
    if (p.geometry !== this.geometry) return 0
    const h = p.hashes
    let n = 0
    while (n < p.count && this.blocks.has(h[n]!)) n++
    return n
  }

  record(p: PromptBlocks): void {
    if (p.geometry !== this.geometry) {
      this.blocks.clear()
      this.geometry = p.geometry
    }
    const h = p.hashes
    // last block first, so the head of the prompt ends the most recently used
    for (let i = p.count - 1; i >= 0; i--) {
      const k = h[i]!
      this.blocks.delete(k)
      this.blocks.set(k, true)
    }
    this.evict()
  }

  clear(): void {
    this.blocks.clear()
  }

  private evict(): void {
    if (this.blocks.size <= this.cap) return
    const it = this.blocks.keys()
    for (let over = this.blocks.size - this.cap; over > 0; over--) {
      const k = it.next()
      if (k.done === true) break
      this.blocks.delete(k.value)
    }
  }
}
