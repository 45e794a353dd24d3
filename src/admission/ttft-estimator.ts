/**
 * The TTFT estimator of one pool, engine-agnostic. A prediction has two parts:
 *
 *   queue wait  = prompt tokens queued ahead in the gateway (priority order) / dispatch rate
 *   server TTFT = α + β · (prefill tokens waiting at the servers + this prompt) / endpoints
 *                   + γ · sequences running per endpoint
 *
 * When no endpoint has headroom now (KV or batch full), the queue wait also includes the
 * time until a running request ends and frees room: the measured mean gap between
 * completions. The dispatch rate (prompt tokens the pool takes per ms while the gateway
 * holds a backlog) is measured; α (fixed cost: one engine step, the network), β (ms per prefill
 * token) and γ (how much a busy decode batch slows the first step) are fitted online by
 * least squares against every finished request's observed server TTFT (first token
 * minus dispatch), starting from the config hints. The KV and slot gates show up in the
 * measured dispatch rate: when the servers are full, the gateway dispatches slowly.
 */
import type { Clock } from '../clock.js'
import { Rls } from './rls.js'

export interface EstimatorHints {
  /** One engine step with a small batch, ms (α's prior). */
  readonly stepMs: number
  /** Prefill throughput of one endpoint, tokens per second (1/β's prior). */
  readonly prefillTokensPerS: number
}

/** What the servers look like when a request is placed or dispatched. */
export interface ServerView {
  /** Usable endpoints. */
  readonly endpoints: number
  /** Prefill tokens waiting at the servers (their queues + sent but not started). */
  readonly waitingTokens: number
  /** Sequences running per endpoint (mean). */
  readonly runningPerEndpoint: number
}

export interface Prediction {
  readonly queueMs: number
  readonly serverMs: number
  readonly totalMs: number
}

/** A rate sample needs at least this much backlogged time. */
const RATE_WINDOW_MS = 200
const RATE_ALPHA = 0.3
const ERROR_ALPHA = 0.05

export class TtftEstimator {
  private readonly clock: Clock
  private readonly rls: Rls
  /** Prompt tokens dispatched per ms while backlogged. */
  private rate: number
  private windowStart: number | undefined = undefined
  private windowTokens = 0
  /** Mean gap between two requests ending, ms (how soon room frees up). */
  private completionGapMs: number
  private lastCompletion: number | undefined = undefined
  private samples = 0
  private meanAbsErr = 0
  private meanErr = 0

  constructor(hints: EstimatorHints, clock: Clock) {
    this.clock = clock
    const msPerToken = 1000 / hints.prefillTokensPerS
    this.rls = new Rls([hints.stepMs, msPerToken, hints.stepMs / 50])
    this.rate = hints.prefillTokensPerS / 1000
    this.completionGapMs = hints.stepMs
  }

  private features(view: ServerView, ownTokens: number): number[] {
    const n = Math.max(1, view.endpoints)
    return [1, (view.waitingTokens + ownTokens) / n, view.runningPerEndpoint]
  }

  serverTtft(view: ServerView, ownTokens: number): number {
    return Math.max(0, this.rls.predict(this.features(view, ownTokens)))
  }

  /**
   * Predicted TTFT of a request of `ownTokens` prompt tokens with `tokensAhead` queued
   * before it in the gateway. `blocked`: no endpoint can take a request now, so even an
   * empty queue means a wait of one dispatch turn.
   */
  predict(view: ServerView, tokensAhead: number, ownTokens: number, blocked: boolean): Prediction {
    const queued = tokensAhead + (blocked ? ownTokens : 0)
    const queueMs = (queued > 0 ? queued / this.rate : 0) + (blocked ? this.completionGapMs : 0)
    const serverMs = this.serverTtft(view, ownTokens)
    return { queueMs, serverMs, totalMs: queueMs + serverMs }
  }

  /** Time for `tokens` of queued prompt work to drain: the honest Retry-After. */
  drainMs(tokens: number): number {
    return tokens / this.rate
  }

  /** A request left the gateway queue for a server; `backlogged`: others still wait. */
  onDispatch(tokens: number, backlogged: boolean): void {
    const now = this.clock.now()
    if (this.windowStart === undefined) {
      if (backlogged) {
        this.windowStart = now
        this.windowTokens = 0
      }
      return
    }
    this.windowTokens += tokens
    const elapsed = now - this.windowStart
    if (elapsed >= RATE_WINDOW_MS) {
      this.rate += RATE_ALPHA * (this.windowTokens / elapsed - this.rate)
      this.windowStart = backlogged ? now : undefined
      this.windowTokens = 0
    } else if (!backlogged) {
      this.windowStart = undefined
    }
  }

  /**
   * A dispatched request ended (room freed on a server). `stillBusy`: others are still in
   * flight, so the gap to the next completion is a real one (not idle time).
   */
  onCompletion(stillBusy: boolean): void {
    const now = this.clock.now()
    if (this.lastCompletion !== undefined) {
      this.completionGapMs += RATE_ALPHA * (now - this.lastCompletion - this.completionGapMs)
    }
    this.lastCompletion = stillBusy ? now : undefined
  }

  /** A finished request: the view at its dispatch and its observed server TTFT. */
  observe(view: ServerView, ownTokens: number, observedServerMs: number): void {
    this.rls.update(this.features(view, ownTokens), observedServerMs)
  }

  /** Records how far a prediction was from what happened (relative error). */
  recordError(predictedMs: number, actualMs: number): number {
    const rel = (predictedMs - actualMs) / Math.max(actualMs, 1)
    this.samples++
    this.meanAbsErr += ERROR_ALPHA * (Math.abs(rel) - this.meanAbsErr)
    this.meanErr += ERROR_ALPHA * (rel - this.meanErr)
    return rel
  }

  state(): object {
    const [alpha, beta, gamma] = this.rls.w
    return {
      model:
        'ttft = tokens_ahead / dispatch_rate + alpha + beta * (server_waiting_tokens + prompt) / endpoints + gamma * running_per_endpoint',
      alphaMs: round(alpha ?? 0),
      betaMsPerToken: round(beta ?? 0, 5),
      gammaMsPerRunningSeq: round(gamma ?? 0, 4),
      dispatchRateTokensPerMs: round(this.rate),
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
