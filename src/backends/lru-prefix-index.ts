/**
 * The PrefixIndex of one endpoint: an LRU of block hashes, bounded by the endpoint's KV
 * capacity in blocks (a server cannot hold more, and evicts the least recently used free
 * blocks first, as this does).
 *
 * A Map from hash to a node of a doubly linked list in recency order: a block sent again
 * moves to the recent end by relinking its node, so the Map is written only when a block is
 * new or forgotten. (Deleting and re-inserting each key, as an insertion-ordered Map allows,
 * rehashed the Map's table every few prompts, and the young-generation collector promoted
 * every replaced table: see src/slot-map.ts. With 16-block prompts at saturation that was
 * the gateway's largest source of promoted garbage.)
 */
import type { PrefixIndex, PromptBlocks } from './prefix-index.js'

/** Blocks remembered when the endpoint's KV capacity is unknown (a million tokens of 16). */
export const DEFAULT_INDEX_BLOCKS = 65_536

class Node {
  prev: Node = this
  next: Node = this
  constructor(readonly key: number) {}
}

export class LruPrefixIndex implements PrefixIndex {
  private readonly blocks = new Map<number, Node>()
  /** Sentinel: `head.next` is the least recently used block, `head.prev` the most recent. */
  private readonly head = new Node(Number.NaN)
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

  /**
   * The prompt's leading blocks held. Found by binary search, not block by block: a prompt's
   * blocks held are always a prefix of it. (Block i's hash covers blocks 0..i, so every
   * prompt that records block i records each block before it, and later: an earlier block is
   * always more recently used than a later one, and is evicted after it.)
   */
  match(p: PromptBlocks): number {
    if (p.geometry !== this.geometry || p.count === 0) return 0
    const h = p.hashes
    const blocks = this.blocks
    if (blocks.has(h[p.count - 1]!)) return p.count
    // the first block not held is in [lo, hi]
    let lo = 0
    let hi = p.count - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (blocks.has(h[mid]!)) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  record(p: PromptBlocks): void {
    if (p.geometry !== this.geometry) {
      this.clear()
      this.geometry = p.geometry
    }
    const h = p.hashes
    const head = this.head
    // last block first, so the head of the prompt ends the most recently used
    for (let i = p.count - 1; i >= 0; i--) {
      const k = h[i]!
      let n = this.blocks.get(k)
      if (n === undefined) {
        n = new Node(k)
        this.blocks.set(k, n)
      } else {
        if (n === head.prev) continue
        n.prev.next = n.next
        n.next.prev = n.prev
      }
      n.prev = head.prev
      n.next = head
      head.prev.next = n
      head.prev = n
    }
    this.evict()
  }

  clear(): void {
    this.blocks.clear()
    this.head.prev = this.head
    this.head.next = this.head
  }

  private evict(): void {
    const head = this.head
    for (let over = this.blocks.size - this.cap; over > 0; over--) {
      const n = head.next
      head.next = n.next
      n.next.prev = head
      n.prev = n
      n.next = n
      this.blocks.delete(n.key)
    }
  }
}
