/**
 * The prompt blocks that the requests in flight at one endpoint hold in its KV cache, so
 * that a request whose prompt begins with blocks another one holds (a shared system
 * prompt, a conversation's history sent again by a retry) reserves only the rest.
 *
 * Why: the ledger's tokens (prompt + expected output per request in flight) are a floor
 * under the endpoint's KV usage (load-correction.ts), and vLLM holds a block that several
 * running requests share once. Counting it per request, on chat sharing a 1,000-token
 * system prompt at 150 requests in flight the gateway took the KV cache for 71-80% used
 * when the engine reported 24-26%, and held requests back for room that was free.
 *
 * A request holds its blocks from its dispatch to its end. Only every STRIDE-th block of
 * its chained hashes (prefix-index.ts: hashes[i] covers blocks 0..i) is kept, so a large
 * prompt costs a few hundred map operations, not thousands; a match is found to within
 * STRIDE blocks, never past the blocks actually held. When the request that brought a
 * block ends first, the one sharing it keeps its smaller reservation: the scraped usage,
 * which counts the block while anyone holds it, covers that until the next scrape.
 */
import { cachedTokens, type PromptBlocks } from './prefix-index.js'

/** Blocks between two kept hashes. */
export const STRIDE = 8

export class InFlightBlocks {
  private readonly refs = new Map<number, number>()

  /** How many leading blocks of `blocks` (a multiple of STRIDE) requests in flight here hold. */
  shared(blocks: PromptBlocks): number {
    if (this.refs.size === 0) return 0
    let n = 0
    for (let i = STRIDE - 1; i < blocks.count; i += STRIDE) {
      if (!this.refs.has(blocks.hashes[i] as number)) break
      n = i + 1
    }
    return n
  }

  /**
   * A request with `blocks` (of `promptTokens`) was sent here: holds them, and returns the
   * tokens of its prompt that requests in flight here held already (its reservation's cut).
   * One pass: each kept hash is looked up (still in the leading run held before it?) as it
   * is counted.
   */
  hold(blocks: PromptBlocks, promptTokens: number, blockSize: number): number {
    let shared = 0
    let leading = true
    for (let i = STRIDE - 1; i < blocks.count; i += STRIDE) {
      const h = blocks.hashes[i] as number
      const n = this.refs.get(h) ?? 0
      if (leading && n > 0) shared = i + 1
      else leading = false
      this.refs.set(h, n + 1)
    }
    return shared === 0 ? 0 : cachedTokens(blocks, shared, promptTokens, blockSize)
  }

  /** The request with `blocks` ended (once per hold). */
  release(blocks: PromptBlocks): void {
    for (let i = STRIDE - 1; i < blocks.count; i += STRIDE) {
      const h = blocks.hashes[i] as number
      const n = (this.refs.get(h) ?? 1) - 1
      if (n <= 0) this.refs.delete(h)
      else this.refs.set(h, n)
    }
  }

  /** Distinct kept hashes (tests read it: none is left once every request is released). */
  get size(): number {
    return this.refs.size
  }
}
