/**
 * The gateway's memory of what each endpoint's prefix cache holds: the faces. The LRU
 * implementation is in lru-prefix-index.ts, the trust rule in prefix-calibration.ts, the
 * per-endpoint whole in endpoint-prefix-cache.ts; a prompt is hashed into blocks once, at
 * the edge (src/openai/prompt-blocks.ts).
 *
 * Like vLLM's automatic prefix caching, a prompt is cut into blocks of the engine's block
 * size (in tokens, approximated from characters as the gateway's prompt-token estimate is)
 * and each block's hash is chained: it covers everything before it, so two prompts share
 * the hash of block i exactly when they share their first i + 1 blocks. The matched prefix
 * of a prompt at an endpoint is therefore its run of leading blocks the endpoint was sent
 * recently, and that is what it is expected to hold.
 */

/** One prompt's chained block hashes, in the geometry they were cut in. */
export interface PromptBlocks {
  /**
   * The cut: block size, character units per block and per message header. Hashes of two
   * geometries never compare; an index meeting a new geometry forgets the old one.
   */
  readonly geometry: string
  /** hashes[i] covers blocks 0..i (53-bit integers, usable as Map keys without allocation). */
  readonly hashes: Float64Array
  /** Full blocks hashed (a trailing partial block is not: engines cache full blocks only). */
  readonly count: number
  /** Character units per block. */
  readonly unitsPerBlock: number
  /** Character units of the whole prompt (its content characters plus the message headers). */
  readonly totalUnits: number
}

/**
 * Which prompt blocks an endpoint was sent recently. Contract: bounded (at most `capacity`
 * blocks, the least recently sent forgotten first); `match` is O(matched blocks), never
 * changes the order, and is 0 for blocks of another geometry; `record` is O(blocks) and makes
 * the prompt's blocks the most recently used, its first blocks the most recent of all (a
 * server evicts the tail of a freed sequence first, so its shared head lives longest); no
 * method throws. The prefix-routing scorer reads `match` per candidate endpoint.
 */
export interface PrefixIndex {
  /** Leading blocks of `blocks` this endpoint was sent and still remembered. */
  match(blocks: PromptBlocks): number
  /** `blocks` were sent to this endpoint. */
  record(blocks: PromptBlocks): void
  /** Blocks remembered now. */
  readonly size: number
  /** Most blocks remembered (the endpoint's KV capacity in blocks). */
  readonly capacity: number
  setCapacity(blocks: number): void
  clear(): void
}

/** What admission reads of one endpoint's prefix cache: expected hits, and the sending. */
export interface PrefixCacheModel {
  /** The engine's block size in tokens (its cache_config_info, else the default 16). */
  readonly blockSize: number
  /** False when the engine says prefix caching is off (cache_config_info): nothing is ever hit. */
  readonly enabled: boolean
  /**
   * Prompt tokens of a prompt of `promptTokens` the endpoint is expected to serve from its
   * cache: `raw` as the index alone matches them, `cached` after the calibration's trust.
   */
  expectedHit(blocks: PromptBlocks, promptTokens: number): { raw: number; cached: number }
  /** The prompt was dispatched here, with `raw` tokens expected hit: remembered and counted. */
  sent(blocks: PromptBlocks, promptTokens: number, raw: number): void
  /** For /admin/state. */
  state(): object
}

/** Block size when the engine does not say (vLLM's default on GPUs). */
export const DEFAULT_BLOCK_SIZE = 16

/**
 * The prompt tokens an endpoint is expected to serve from its cache, from the matched
 * blocks: the matched share of the prompt's units applied to its token estimate (so a
 * character-per-token ratio that moved since the cut does not matter), times `trust`,
 * rounded down to whole engine blocks, and never the last token (an engine computes at
 * least one token of every prompt to produce logits: vLLM recomputes the last block of a
 * full hit).
 */
export function cachedTokens(
  blocks: PromptBlocks,
  matched: number,
  promptTokens: number,
  blockSize: number,
  trust = 1,
): number {
  if (matched <= 0 || blocks.totalUnits <= 0 || promptTokens <= 1 || blockSize <= 0) return 0
  const share = Math.min(1, (matched * blocks.unitsPerBlock) / blocks.totalUnits)
  const tokens = Math.min(promptTokens * share * Math.max(0, Math.min(1, trust)), promptTokens - 1)
  return Math.floor(tokens / blockSize) * blockSize
}
