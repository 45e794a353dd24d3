/**
 * One admitted request as a pool's admission holds it: waiting in the queue (it is the
 * `Queued` the face returns), then, once dispatched, the lease that observes its exchange.
 */

import type { EngineFactsView } from '../backends/engine-facts.js'
import type { PromptBlocks } from '../backends/prefix-index.js'
import type { Endpoint, EndpointResult, Lease } from '../backends/types.js'
import type { GatewayError } from '../errors.js'
import type { Ticket } from '../ticket.js'
import type { Queued } from './face.js'
import type { PoolAdmission } from './pool-admission.js'
import type { Prediction } from './ttft-estimator.js'

/** A request admitted to a pool, from its decision until it ends. */
export class Waiting implements Queued {
  /** Unique per request (a client's x-request-id need not be). */
  readonly id: string
  readonly lease: Promise<Lease | GatewayError>
  /** The estimator's server-side features at dispatch (set by the dispatcher). */
  serverFeatures: readonly number[] | undefined = undefined
  /** Prompt tokens awaiting their first token at its endpoint when it was dispatched, beyond those in the step in progress (its own not counted). */
  pendingTokens = 0
  /** Of its prompt tokens, those the servers are expected to compute: on arrival (admission.ts), then at its endpoint (at dispatch). */
  computeTokens: number | undefined = undefined
  /** Prompt tokens sent to its endpoint after it and before its first token, with when (prefill-ledger.ts). */
  private joined: number[] = []
  /** Of those, the tokens sent before the step that brought its first token began: they shared it. */
  joinedTokens = 0
  /** The joined tokens the estimator expected at its dispatch (its features include them). */
  expectedJoined = 0
  /** Its endpoint's engine facts, which learn from its first token (set at dispatch). */
  facts: EngineFactsView | undefined = undefined
  /** Set when placed in a queue. */
  owner: PoolAdmission | undefined = undefined
  /** When it was placed in the queue (the pool's clock). */
  queuedAt = 0
  /** When it was first held for the endpoint caching its prompt (cache-hold.ts), if it was. */
  heldSince: number | undefined = undefined
  /**
   * By when its first token is promised (the pool's clock): its arrival plus its predicted
   * TTFT, with slack; set when placed, for a class refused on its predicted TTFT.
   */
  promiseBy: number | undefined = undefined
  /** The latest dispatch that still meets its objectives (the pool's clock; set when placed). */
  dispatchBy = Number.POSITIVE_INFINITY
  /** Times a request behind it in its class went first, to the endpoint caching that one's prompt. */
  bypassed = 0
  /** Its stream's inter-token gaps so far: their sum (ms) and count. */
  gapSumMs = 0
  gaps = 0
  /** Its TPOT was judged (its class's TPOT margin learned from it): once, early or at its end. */
  tpotJudged = false
  /** The last engine step at its endpoint whose start brought it a token (EndpointGates.tokenFrom). */
  stepSeen = -1
  stepSeenAt = Number.NEGATIVE_INFINITY
  /** Its place among the requests running at its endpoint (running.ts, src/slot-map.ts). */
  slot = -1
  /** The queues' record of it while it is queued (class-queues.ts). */
  queueEntry: object | undefined = undefined
  private settle: (r: Lease | GatewayError) => void = () => {}

  constructor(
    readonly ticket: Ticket,
    readonly className: string,
    readonly promptTokens: number,
    /** KV tokens to reserve: prompt + choices x expected output. */
    readonly kvTokens: number,
    /** The prediction made on arrival (the estimator learns from its outcome). */
    readonly prediction: Prediction,
    /** Its prompt's blocks, when prefix awareness is on (recorded at the endpoint it is sent to). */
    readonly blocks: PromptBlocks | undefined = undefined,
  ) {
    this.id = String(++waitingSeq)
    this.lease = new Promise((resolve) => {
      this.settle = resolve
    })
  }

  cancel(): boolean {
    return this.owner?.cancel(this) ?? false
  }

  /** Dispatched from the queue, or shed from it. */
  resolve(r: Lease | GatewayError): void {
    this.settle(r)
  }

  /** `tokens` of prompt were sent to its endpoint at `sentAt`, after it (JoinedSink). */
  join(tokens: number, sentAt: number): void {
    this.joined.push(sentAt, tokens)
  }

  /**
   * Its first token came, from a step begun at `stepBegan`: the prompt tokens sent after it
   * and by then shared that step (joinedTokens); returns them.
   */
  joinedBy(stepBegan: number): number {
    let n = 0
    for (let i = 0; i < this.joined.length; i += 2) if (this.joined[i]! < stepBegan) n += this.joined[i + 1]!
    this.joined = []
    this.joinedTokens = n
    return n
  }
}

let waitingSeq = 0

/**
 * Gaps after which a stream whose TPOT so far is over its objective teaches its class's
 * TPOT margin that miss at once: a stream of hundreds of tokens ends seconds after the steps
 * that made it slow, too late for a guard to correct. A stream on track then is judged on
 * its whole TPOT at its end (so a stream slowed later still counts), as is a shorter one.
 */
export const TPOT_JUDGED_AFTER_GAPS = 32

/**
 * The lease of an admitted request: the endpoint's lease, plus admission's observer of
 * the exchange. The prompt counts in the endpoint's prefill budget until it is prefilled,
 * when the estimator learns its TTFT; each token gap feeds the endpoint's decode guard (and,
 * after TPOT_JUDGED_AFTER_GAPS, its TPOT so far its class's TPOT margin); at the end the
 * endpoint's lease is released first, then its prompt's size is learned and the dispatcher
 * runs.
 */
export class AdmittedLease implements Lease {
  private released = false
  constructor(
    private readonly inner: Lease,
    readonly w: Waiting,
    private readonly owner: PoolAdmission,
    private readonly uncount: () => void,
  ) {}

  get endpoint(): Endpoint {
    return this.inner.endpoint
  }

  prefilled(): void {
    this.uncount()
    this.inner.prefilled?.(this.w.ticket)
    this.owner.prefilled(this.w, this.inner.endpoint.name)
  }

  tokenGap(_t: Ticket, gapMs: number, now: number): void {
    this.owner.observeGap(this.inner.endpoint, this.w, gapMs, now)
    const w = this.w
    w.gapSumMs += gapMs
    w.gaps++
    // a miss so far is taught now; a stream on track is judged whole, at its end
    if (w.gaps === TPOT_JUDGED_AFTER_GAPS && !w.tpotJudged)
      w.tpotJudged = this.owner.judgeTpot(w.className, w.gapSumMs / w.gaps, false)
  }

  ended(_t: Ticket, result: EndpointResult | undefined): void {
    this.release(result ?? 'client_abort')
  }

  release(result: EndpointResult): void {
    this.inner.release(result)
    this.uncount()
    if (this.released) return
    this.released = true
    this.owner.finished(this.w, this.inner.endpoint.name)
  }
}
