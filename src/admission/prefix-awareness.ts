/**
 * Prefix-cache awareness of one pool's admission: the prompt tokens a server must compute
 * are the prompt minus the prefix it is expected to hold, by the gateway's own memory of
 * what it sent each endpoint (src/backends/prefix-index.ts), trusted as far as the engine's
 * own counters confirm it (src/backends/prefix-calibration.ts).
 *
 * Which endpoint: a request is predicted before the picker chooses its endpoint (at once,
 * or later from the queue). When the pool routes by prefix (routing.scorer:
 * prefix-affinity), the prediction asks the pool which endpoint the picker would choose
 * (among those open to it now when it can go at once, among every usable endpoint when it
 * must queue: where its affinity lies) and takes the match there, so routing and
 * prediction agree. Otherwise the picker (least-wait) does not look at prefixes, and the
 * prediction takes the mean expected cached tokens over the endpoints it may be sent to
 * (with one replica, exactly the match on the one it will go to). At dispatch the endpoint
 * is known: the estimator learns from (and the prefill ledger counts) the match there, and
 * the prompt's blocks are recorded there. The request's blocks and session go to the picker
 * with it (`hint`).
 *
 * With admission.estimator.prefix_cache off and prefix routing on, prompts are still cut
 * and recorded (routing needs them) but every prompt token is priced as computed.
 *
 * The cut (block size, characters per token) is one per pool: the endpoints' block size,
 * and the model's characters-per-token ratio when the cut was made; a ratio that moves by
 * more than REGEOMETRY (the estimate still converging) makes a new cut, and each index then
 * forgets the old one.
 */

import { DEFAULT_BLOCK_SIZE, type PrefixCacheModel, type PromptBlocks } from '../backends/prefix-index.js'
import type { BackendPool, Endpoint, EndpointView, PickRequest } from '../backends/types.js'
import { type BlockGeometry, blockGeometry, promptBlocks } from '../openai/prompt-blocks.js'
import type { JsonBody } from '../openai/request-fields.js'
import type { Waiting } from './waiting.js'

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

  /** The pool routes by prefix: prompts are cut for its picker, and predicted by its choice. */
  readonly routes: boolean

  /** `enabled`: admission.estimator.prefix_cache; `pool`: the pool it predicts for (its routing). */
  constructor(
    readonly enabled: boolean,
    private readonly pool?: BackendPool,
  ) {
    this.routes = pool?.config.routing?.scorer === 'prefix-affinity'
  }

  /**
   * The request's blocks, cut for this pool; undefined when nothing reads them (pricing off,
   * and no routing by prefix among two endpoints or more) or the prompt has no single prefix.
   */
  blocksFor(
    body: JsonBody,
    shape: PromptShape,
    charsPerToken: number,
    endpoints: readonly HasPrefixCache[],
  ): PromptBlocks | undefined {
    if (!this.enabled && !(this.routes && endpoints.length > 1)) return undefined
    return promptBlocks(body, this.cut(charsPerToken, endpoints), shape.promptChars, shape.promptMessages)
  }

  /**
   * Expected cached tokens of a prompt over the endpoints it may go to (`accept`: those open
   * to it; see above): `expected` is what it is predicted by (the match on the endpoint the
   * picker would choose, when the pool routes by prefix; else the mean); `best`, the most
   * any of them holds, is what it could have at best (the least TTFT it can get).
   * `kvTokens` and `session`: what the picker is given with the request.
   */
  expected(
    views: readonly EndpointView[],
    blocks: PromptBlocks,
    promptTokens: number,
    accept?: (v: EndpointView) => boolean,
    kvTokens = promptTokens,
    session?: string,
  ): { expected: number; best: number } {
    if (!this.enabled) return { expected: 0, best: 0 }
    let sum = 0
    let n = 0
    let best = 0
    const open: EndpointView[] = []
    for (const v of views) {
      if (accept !== undefined && !accept(v)) continue
      const cached = v.prefixCache?.expectedHit(blocks, promptTokens).cached ?? 0
      open.push(v)
      sum += cached
      best = Math.max(best, cached)
      n++
    }
    const chosen = this.routes
      ? this.pool?.choose?.(open, kvTokens, { blocks, promptTokens, session })
      : undefined
    if (chosen !== undefined)
      return { expected: chosen.prefixCache?.expectedHit(blocks, promptTokens).cached ?? 0, best }
    return { expected: n === 0 ? 0 : sum / n, best }
  }

  /**
   * Of a prompt, the tokens each endpoint must compute (its expected cached prefix there
   * excluded): what the prefill budget counts. Undefined without blocks, or with pricing
   * off (the whole prompt; blocks cut for routing alone price nothing).
   */
  computeAt(
    blocks: PromptBlocks | undefined,
    promptTokens: number,
  ): ((v: EndpointView) => number) | undefined {
    if (blocks === undefined || !this.enabled) return undefined
    return (v) => promptTokens - (v.prefixCache?.expectedHit(blocks, promptTokens).cached ?? 0)
  }

  /** What the pool's picker is told of a request: its blocks and session (undefined: nothing). */
  hint(w: Waiting): PickRequest | undefined {
    const session = w.ticket.sessionId
    if (w.blocks === undefined && session === undefined) return undefined
    return { blocks: w.blocks, promptTokens: w.promptTokens, session }
  }

  /** At dispatch to `endpoint`: its expected hit (trusted; 0 when pricing is off); the blocks are recorded there. */
  dispatched(endpoint: Endpoint, blocks: PromptBlocks, promptTokens: number): number {
    const pc = endpoint.prefixCache
    if (pc === undefined) return 0
    const hit = pc.expectedHit(blocks, promptTokens)
    pc.sent(blocks, promptTokens, hit.raw)
    return this.enabled ? hit.cached : 0
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
