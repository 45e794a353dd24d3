/**
 * One endpoint's prefix cache as the gateway models it: an index of the prompt blocks sent
 * there (LRU, bounded by the endpoint's KV capacity in blocks), the engine's block size, and
 * the trust its engine's own counters give the index (prefix-calibration.ts). It lives with
 * the endpoint, so a server that takes over a slot name starts with nothing remembered.
 *
 * From each scrape: block size and whether prefix caching is on (vLLM's cache_config_info),
 * KV capacity (scraped, else the pool's `capacity.kv_tokens`), and the prefix-cache
 * counters. A restart (a counter going backwards) forgets everything: its cache is empty.
 */
import { DEFAULT_INDEX_BLOCKS, LruPrefixIndex } from './lru-prefix-index.js'
import { PrefixCalibration } from './prefix-calibration.js'
import {
  cachedTokens,
  DEFAULT_BLOCK_SIZE,
  type PrefixCacheModel,
  type PrefixIndex,
  type PromptBlocks,
} from './prefix-index.js'
import type { BackendLoad } from './types.js'

/** The pool's overrides (routing.block_size, routing.index_blocks): they win over the engine's facts. */
export interface PrefixCacheOverrides {
  readonly blockSize?: number | undefined
  readonly indexBlocks?: number | undefined
}

/**
 * Bytes one remembered block costs in the index, about: its Map entry (a 53-bit key is a heap
 * number) and its node in the recency list (94 measured on Node 20, x64, a million blocks).
 */
export const BYTES_PER_BLOCK = 94

export class EndpointPrefixCache implements PrefixCacheModel {
  readonly index: PrefixIndex
  readonly calibration = new PrefixCalibration()
  private size = DEFAULT_BLOCK_SIZE
  private on = true
  private capacitySource: 'engine' | 'config' | 'default' | 'override' = 'default'
  /** Predicted hit tokens and prompt tokens sent here, ever (the pool's predicted hit ratio). */
  private sentTotals = { hitTokens: 0, promptTokens: 0 }

  constructor(
    kvTokensHint?: number,
    private readonly overrides: PrefixCacheOverrides = {},
  ) {
    if (overrides.blockSize !== undefined) this.size = overrides.blockSize
    this.index = new LruPrefixIndex(overrides.indexBlocks ?? DEFAULT_INDEX_BLOCKS)
    if (overrides.indexBlocks !== undefined) this.capacitySource = 'override'
    else this.applyCapacity(undefined, kvTokensHint)
  }

  /** Predicted hit tokens (raw) and prompt tokens of everything sent here. */
  get totals(): { readonly hitTokens: number; readonly promptTokens: number } {
    return this.sentTotals
  }

  get blockSize(): number {
    return this.size
  }

  get enabled(): boolean {
    return this.on
  }

  expectedHit(blocks: PromptBlocks, promptTokens: number): { raw: number; cached: number } {
    if (!this.on) return { raw: 0, cached: 0 }
    const matched = this.index.match(blocks)
    if (matched === 0) return { raw: 0, cached: 0 }
    const raw = cachedTokens(blocks, matched, promptTokens, this.size)
    const cached = cachedTokens(blocks, matched, promptTokens, this.size, this.calibration.trust)
    return { raw, cached }
  }

  sent(blocks: PromptBlocks, promptTokens: number, raw: number): void {
    this.index.record(blocks)
    this.calibration.sent(promptTokens, this.on ? raw : 0)
    this.sentTotals.promptTokens += Math.max(0, promptTokens)
    this.sentTotals.hitTokens += this.on ? Math.max(0, raw) : 0
  }

  /** A fresh scrape: engine facts and counters. `kvTokensHint`: the pool's capacity.kv_tokens. */
  scraped(load: BackendLoad, kvTokensHint?: number): void {
    if (this.overrides.blockSize === undefined && load.blockSize !== undefined && load.blockSize > 0)
      this.size = load.blockSize
    if (load.prefixCaching !== undefined) this.on = load.prefixCaching
    this.applyCapacity(load.kvCapacityTokens, kvTokensHint)
    if (this.calibration.scraped(load.prefixCacheQueriesTotal, load.prefixCacheHitsTotal)) this.index.clear()
  }

  private applyCapacity(scraped: number | undefined, hint: number | undefined): void {
    if (this.overrides.indexBlocks !== undefined) return
    const tokens = scraped ?? hint
    if (tokens === undefined || !(tokens > 0)) return
    this.capacitySource = scraped !== undefined ? 'engine' : 'config'
    this.index.setCapacity(Math.max(1, Math.floor(tokens / this.size)))
  }

  state(): object {
    return {
      enabled: this.on,
      blockSize: this.size,
      indexBlocks: this.index.size,
      indexBytes: this.index.size * BYTES_PER_BLOCK,
      capacityBlocks: this.index.capacity,
      capacityFrom: this.capacitySource,
      ...this.calibration.state(),
    }
  }
}
