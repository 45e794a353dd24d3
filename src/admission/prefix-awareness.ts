/**
 * Prefix-cache awareness of one pool's admission: the prompt tokens a server must compute
 * are the prompt minus the prefix it is expected to hold, by the gateway's own memory of
 * what it sent each endpoint (src/backends/prefix-index.ts), trusted as far as the engine's
 * own counters confirm it (src/backends/prefix-calibration.ts).
 *
 * Which endpoint: a request is predicted before the picker chooses its endpoint (at once,
 * or later from the queue), and the picker (least-wait) does not look at prefixes. So the
 * prediction takes the expected cached tokens over the endpoints it may be sent to: the
 * mean over those open to it now when it can go at once, over every usable endpoint when
 * it must queue (it goes wherever one opens first). With one replica that is exactly the
 * match on the endpoint it will go to. At dispatch the endpoint is known: the estimator
 * learns from (and the prefill ledger counts) the match there, and the prompt's blocks are
 * recorded there. When routing becomes prefix-aware (the picker scores by this match), the
 * expectation should become the picked endpoint's match.
 *
 * The cut (block size, characters per token) is one per pool: the endpoints' block size,
 * and the model's characters-per-token ratio when the cut was made; a ratio that moves by
 * more than REGEOMETRY (the estimate still converging) makes a new cut, and each index then
 * forgets the old one.
 */

import { DEFAULT_BLOCK_SIZE, type PrefixCacheModel, type PromptBlocks } from '../backends/prefix-index.js'
import type { Endpoint, EndpointView } from '../backends/types.js'
import { type BlockGeometry, blockGeometry, promptBlocks } from '../openai/prompt-blocks.js'
import type { JsonBody } from '../openai/request-fields.js'

/** Relative change of the characters-per-token ratio that makes a new cut. */
export const REGEOMETRY = 0.15

/** An endpoint or its view: where the block size is read (the first that has one). */
interface HasPrefixCache {
  readonly prefixCache?: PrefixCacheModel | undefined
}

export interface PromptShape {
  readonly promptChars: number
  readonly promptMessages: number
}

export class PrefixAwareness {
  private geometry: BlockGeometry | undefined = undefined
  private cuts = 0

  constructor(readonly enabled: boolean) {}

  /** The request's blocks, cut for this pool; undefined when off or the prompt has no single prefix. */
  blocksFor(
    body: JsonBody,
    shape: PromptShape,
    charsPerToken: number,
    endpoints: readonly HasPrefixCache[],
  ): PromptBlocks | undefined {
    if (!this.enabled) return undefined
    return promptBlocks(body, this.cut(charsPerToken, endpoints), shape.promptChars, shape.promptMessages)
  }

  /**
   * Expected cached tokens of a prompt over the endpoints it may go to (`accept`: those open
   * to it; see above): `expected`, the mean, is what it is predicted by; `best`, the most
   * any of them holds, is what it could have at best (the least TTFT it can get).
   */
  expected(
    views: readonly EndpointView[],
    blocks: PromptBlocks,
    promptTokens: number,
    accept?: (v: EndpointView) => boolean,
  ): { expected: number; best: number } {
    let sum = 0
    let n = 0
    let best = 0
    for (const v of views) {
      if (accept !== undefined && !accept(v)) continue
      const cached = v.prefixCache?.expectedHit(blocks, promptTokens).cached ?? 0
      sum += cached
      best = Math.max(best, cached)
      n++
    }
    return { expected: n === 0 ? 0 : sum / n, best }
  }

  /**
   * Of a prompt, the tokens each endpoint must compute (its expected cached prefix there
   * excluded): what the prefill budget counts. Undefined without blocks (the whole prompt).
   */
  computeAt(
    blocks: PromptBlocks | undefined,
    promptTokens: number,
  ): ((v: EndpointView) => number) | undefined {
    if (blocks === undefined) return undefined
    return (v) => promptTokens - (v.prefixCache?.expectedHit(blocks, promptTokens).cached ?? 0)
  }

  /** At dispatch to `endpoint`: its expected hit (raw and trusted); the blocks are recorded there. */
  dispatched(endpoint: Endpoint, blocks: PromptBlocks, promptTokens: number): number {
    const pc = endpoint.prefixCache
    if (pc === undefined) return 0
    const hit = pc.expectedHit(blocks, promptTokens)
    pc.sent(blocks, promptTokens, hit.raw)
    return hit.cached
  }

  private cut(charsPerToken: number, endpoints: readonly HasPrefixCache[]): BlockGeometry {
    let blockSize = DEFAULT_BLOCK_SIZE
    for (const v of endpoints) {
      if (v.prefixCache !== undefined) {
        blockSize = v.prefixCache.blockSize
        break
      }
    }
    const g = this.geometry
    if (
      g === undefined ||
      g.blockSize !== blockSize ||
      Math.abs(charsPerToken - g.charsPerToken) > REGEOMETRY * g.charsPerToken
    ) {
      this.geometry = blockGeometry(blockSize, charsPerToken)
      this.cuts++
    }
    return this.geometry as BlockGeometry
  }

  state(): object {
    const g = this.geometry
    return {
      enabled: this.enabled,
      blockSize: g?.blockSize ?? null,
      charsPerToken: g?.charsPerToken ?? null,
      cuts: this.cuts,
    }
  }
}
