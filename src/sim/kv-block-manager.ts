/** A KV block registered in the prefix cache (identified by the hash of its token prefix). */
export interface CachedBlock {
  readonly hash: string
  refs: number
}

/** What the block manager needs to know about a sequence; SimRequest implements it. */
export interface BlockHolder {
  /** Blocks held in total (anonymous + cached). */
  numBlocks: number
  /** The cached blocks held, in prompt order; always the first `cached.length` of the held blocks. */
  cached: CachedBlock[]
}

/**
 * The paged KV cache, in blocks of `blockSize` tokens, vLLM style.
 *
 * Blocks are fungible unless prefix caching registers them under a hash. A block is used while a
 * sequence holds it; cached blocks that nobody holds stay in an LRU list and count as free (they
 * are evicted, oldest first, when fresh blocks run out), exactly as vLLM V1 counts
 * `kv_cache_usage_perc`: used / total. All operations are O(1) per block.
 */
export class KvBlockManager {
  readonly totalBlocks: number
  readonly blockSize: number
  private anonUsed = 0
  private cachedInUse = 0
  private readonly byHash = new Map<string, CachedBlock>()
  /** Cached blocks with refs === 0, least recently freed first. */
  private readonly evictable = new Map<string, CachedBlock>()

  constructor(totalBlocks: number, blockSize: number) {
    this.totalBlocks = totalBlocks
    this.blockSize = blockSize
  }

  get usedBlocks(): number {
    return this.anonUsed + this.cachedInUse
  }

  get freeBlocks(): number {
    return this.totalBlocks - this.usedBlocks
  }

  /** Fraction of blocks in use, 0..1 (vLLM's `kv_cache_usage_perc`). */
  get usage(): number {
    return this.usedBlocks / this.totalBlocks
  }

  /** Blocks needed to hold `tokens` tokens. */
  blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.blockSize)
  }

  /**
   * Makes `h` hold enough blocks for `tokens` tokens. Returns false (and changes nothing) when the
   * cache cannot supply them.
   */
  allocate(h: BlockHolder, tokens: number): boolean {
    const extra = this.blocksFor(tokens) - h.numBlocks
    if (extra <= 0) return true
    if (extra > this.freeBlocks) return false
    const fresh = this.totalBlocks - this.usedBlocks - this.evictable.size
    for (let i = fresh; i < extra; i++) this.evictOne()
    this.anonUsed += extra
    h.numBlocks += extra
    return true
  }

  /** Releases every block `h` holds; its cached blocks become evictable (most recent last). */
  free(h: BlockHolder): void {
    this.anonUsed -= h.numBlocks - h.cached.length
    for (let i = h.cached.length - 1; i >= 0; i--) {
      const b = h.cached[i]!
      b.refs--
      if (b.refs === 0) {
        this.cachedInUse--
        this.evictable.set(b.hash, b)
      }
    }
    h.numBlocks = 0
    h.cached = []
  }

  /**
   * Looks up the longest run of `hashes` already cached and makes `h` hold those blocks.
   * `h` must hold nothing yet. Returns the number of blocks hit.
   */
  acquirePrefix(h: BlockHolder, hashes: readonly string[], maxBlocks: number): number {
    let n = 0
    while (n < maxBlocks && n < hashes.length) {
      const b = this.byHash.get(hashes[n]!)
      if (b === undefined) break
      if (b.refs === 0) {
        this.evictable.delete(b.hash)
        this.cachedInUse++
      }
      b.refs++
      h.cached.push(b)
      n++
    }
    h.numBlocks += n
    return n
  }

  /**
   * Registers the next anonymous block of `h` (the one right after its cached blocks), now fully
   * computed, under `hash`. If another sequence already cached that content, `h` shares it and its
   * own copy is freed.
   */
  register(h: BlockHolder, hash: string): void {
    if (h.cached.length >= h.numBlocks) return
    const existing = this.byHash.get(hash)
    this.anonUsed--
    if (existing !== undefined) {
      if (existing.refs === 0) {
        this.evictable.delete(hash)
        this.cachedInUse++
      }
      existing.refs++
      h.cached.push(existing)
      return
    }
    const b: CachedBlock = { hash, refs: 1 }
    this.byHash.set(hash, b)
    this.cachedInUse++
    h.cached.push(b)
  }

  /** Number of cached blocks (held or evictable). */
  get cachedBlocks(): number {
    return this.byHash.size
  }

  private evictOne(): void {
    const first = this.evictable.keys().next()
    if (first.done === true) return
    this.evictable.delete(first.value)
    this.byHash.delete(first.value)
  }
}
