/**
 * The TTFT estimator of one pool, engine-agnostic:
 *
 *   TTFT = α + β · P / endpoints + γ · R  (+ one completion gap when no endpoint has room)
 *
 *   P = prefill tokens that must run before this request's first token: the prompts queued
 *       ahead of it in the gateway (its class and those above), the prompts waiting at the
 *       servers, and its own prompt;
 *   R = sequences running per endpoint (a busy decode batch makes every step longer).
 *
 * α (fixed cost: a step, the network), β (ms per prefill token of one endpoint, under the
 * load it runs at) and γ start from the config hints and are fitted online by recursive
 * least squares to every streamed request's observed TTFT (arrival to first token) against
 * the P and R it saw on arrival. When no endpoint has headroom (KV cache or batch full), a
 * request also waits for one running request to end: the measured mean gap between
 * completions is added.
 */
import type { Clock } from '../clock.js'
import { Rls } from './rls.js'

export interface EstimatorHints {
  /** One engine step with a small batch, ms (α's prior). */
  readonly stepMs: number
  /** Prefill throughput of one endpoint, tokens per second (1/β's prior). */
  readonly prefillTokensPerS: number
}

/** What the servers look like now. */
export interface ServerView {
  /** Usable endpoints. */
  readonly endpoints: number
  /** Prefill tokens waiting at the servers (their queues, corrected between scrapes). */
  readonly waitingTokens: number
  /** Sequences running per endpoint (mean). */
  readonly runningPerEndpoint: number
}

export interface Prediction {
  /** The features it was made from, kept to learn from the outcome. */
  readonly features: readonly number[]
  /** The wait for room added because no endpoint had headroom. */
  readonly blockedMs: number
  /** The least time after dispatch (the request's own prefill): for shedding deadlines. */
  readonly serverMs: number
  readonly totalMs: number
}

const GAP_ALPHA = 0.3
const ERROR_ALPHA = 0.05

export class TtftEstimator {
  private readonly clock: Clock
  private readonly rls: Rls
  /** Mean gap between two requests ending while others run, ms (how soon room frees up). */
  private completionGapMs: number
  private lastCompletion: number | undefined = undefined
  private samples = 0
  private meanAbsErr = 0
  private meanErr = 0

  constructor(hints: EstimatorHints, clock: Clock) {
    this.clock = clock
    this.rls = new Rls([hints.stepMs, 1000 / hints.prefillTokensPerS, hints.stepMs / 50])
    this.completionGapMs = hints.stepMs
  }

  predict(view: ServerView, tokensAhead: number, ownTokens: number, blocked: boolean): Prediction {
    const n = Math.max(1, view.endpoints)
    const features = [1, (tokensAhead + view.waitingTokens + ownTokens) / n, view.runningPerEndpoint]
    const blockedMs = blocked ? this.completionGapMs : 0
    const base = Math.max(0, this.rls.predict(features))
    const [alpha = 0, beta = 0] = this.rls.w
    const serverMs = Math.min(base, Math.max(0, alpha + (beta * ownTokens) / n))
    return { features, blockedMs, serverMs, totalMs: base + blockedMs }
  }

  /** Time for `tokens` of prompt work to drain from `endpoints`: the honest Retry-After. */
  drainMs(tokens: number, endpoints: number): number {
    return (Math.max(0, this.rls.w[1] ?? 0) * tokens) / Math.max(1, endpoints)
  }

  /**
   * A dispatched request ended (room freed on a server). `stillBusy`: others are still in
   * flight, so the gap to the next completion is a real one (not idle time).
   */
  onCompletion(stillBusy: boolean): void {
    const now = this.clock.now()
    if (this.lastCompletion !== undefined) {
      this.completionGapMs += GAP_ALPHA * (now - this.lastCompletion - this.completionGapMs)
    }
    this.lastCompletion = stillBusy ? now : undefined
  }

  /** Learns from a streamed request's observed TTFT (arrival to first token). */
  observe(p: Prediction, observedMs: number): void {
    this.rls.update(p.features, Math.max(0, observedMs - p.blockedMs))
    const rel = (p.totalMs - observedMs) / Math.max(observedMs, 1)
    this.samples++
    this.meanAbsErr += ERROR_ALPHA * (Math.abs(rel) - this.meanAbsErr)
    this.meanErr += ERROR_ALPHA * (rel - this.meanErr)
  }

  state(): object {
    const [alpha, beta, gamma] = this.rls.w
    return {
      model:
        'ttft = alpha + beta * prefill_tokens_ahead / endpoints + gamma * running_per_endpoint (+ completion gap when full)',
      alphaMs: round(alpha ?? 0),
      betaMsPerToken: round(beta ?? 0, 5),
      gammaMsPerRunningSeq: round(gamma ?? 0, 4),
      completionGapMs: round(this.completionGapMs),
      samples: this.samples,
      meanAbsRelativeError: round(this.meanAbsErr, 3),
      meanRelativeError: round(this.meanErr, 3),
    }
  }
}

function round(v: number, digits = 2): number {
  const f = 10 ** digits
  return Math.round(v * f) / f
}
