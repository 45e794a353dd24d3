/**
 * The TTFT estimator of one pool, engine-agnostic. A request's TTFT is its wait in the
 * gateway's queue plus its time at the server:
 *
 *   TTFT = queue wait + server time
 *   queue wait  = 0 when the request goes at once, else W
 *   server time = α + β · P + γ · S + δ · R
 *
 *   W = when the request is forecast to be dispatched (dispatch-forecast.ts): the pool's
 *       next engine steps played forward from what the gateway knows (each endpoint's step
 *       in progress and its step model, step-timeline.ts; the prompts pending there; the
 *       decode guard's mean), with the dispatcher's own rules (the prefill budget, the
 *       guard), the queue ahead draining into the room as it frees;
 *   P = the prompt tokens the server must compute in the step that brings the first token:
 *       those sent with it (the prompts pending at the endpoint beyond the step in progress,
 *       or, for a queued request, those ahead of it in its burst; and those expected to
 *       arrive behind it before that step begins, at its endpoint's share of the class's
 *       arrival rate while the budget has room), what waits at the server from other
 *       clients, and its own prompt less the prefix the server is expected to hold in its
 *       prefix cache (prefix-awareness.ts; the whole prompt when prefix awareness is off);
 *   S = a decode step at the endpoint then, by its step model (its streams and their context);
 *   R = the time left in the step in progress when it is sent (a prompt sent mid-step waits
 *       for that step to end): by the step model, from when the gateway saw that step begin.
 *
 * The wait is the forecast as it is: it is played from the engines' learned step times and
 * the gateway's own rules, and a fit of it to the waits that came would learn only from the
 * requests that were dispatched (those refused from the queue waited longer than forecast:
 * fitted that way, in bench:admission it drifted to κ 60 ms + ν 0.57 · W). α (fixed
 * cost: the network, scheduling), β (ms per prompt token), γ and δ start from the hints (0,
 * 1 / prefill tokens/s, 1, 1) and are fitted to every streamed request's time from dispatch
 * to first token, of every class (the engine does not know classes, and so the fit keeps
 * learning while a class is refused), against the P (with the tokens that did join its step),
 * S and R it had at dispatch. The error is judged on the whole prediction (arrival to first
 * token) of the classes refused on it.
 *
 * The hints are the engines' facts (src/backends/engine-facts.ts): the priors from config
 * or the defaults at first, then what is learned of the engines (adoptPriors). A new
 * prefill rate, or a step a quarter or more from the one it was seeded with, re-seeds the
 * server part only while it has fewer than RESEED_BELOW observations of its own (after
 * that its fit knows better). The pool's dispatch rate D
 * (prompt tokens per ms released from a backlogged queue, measured) prices the honest
 * Retry-After of a refusal: the time for the queue ahead to drain.
 *
 * What the fit does not learn: a server time far over its own prediction (OUTLIER_FACTOR
 * times it, and OUTLIER_STEPS steps over it) while such times are the exception among the
 * last OUTLIER_WINDOW. The model has no term for a wait at the server that its features do not
 * see (a server that runs fewer requests at once than it is sent, e.g. a llama.cpp server's
 * `--parallel` slots when `capacity.max_num_seqs` is not set): a burst of six streams to a
 * server of four slots taught two waits of 2.3 and 3.7 s for 12-token prompts, α went to
 * 2.8 s, and every request after was refused as unreachable on an idle server, for good
 * (a refused request teaches nothing). When most recent times are that far over, the server
 * has changed, and they are learned.
 *
 * The verdict that an objective cannot be met even on an idle server (leastServerMs) is
 * never worse than the engine's facts: one step and the prompt at the prefill rate. The
 * fit can only say it is better: a request refused as unreachable is never sent, so a
 * wrong fit there would never be corrected.
 */
import type { Clock } from '../clock.js'
import type { DispatchForecast } from './dispatch-forecast.js'
import { DispatchRate } from './dispatch-rate.js'
import { priorMoved, RESEED_BELOW, Rls } from './rls.js'

export interface EstimatorHints {
  /** One engine step with a small batch, ms (S of an idle endpoint). */
  readonly stepMs: number
  /** Prefill throughput of one endpoint, tokens per second (1/β's prior, and D's). */
  readonly prefillTokensPerS: number
}

/** What the servers look like now. */
export interface ServerView {
  /** Usable endpoints. */
  readonly endpoints: number
  /** Prompt tokens not yet prefilled per endpoint (mean). */
  readonly pendingTokens: number
  /** Of those, waiting at the servers beyond what the gateway sent (other clients), per endpoint. */
  readonly foreignTokens: number
  /** The endpoints' step time now (mean live inter-token latency), ms; undefined when unmeasured. */
  readonly stepMs: number | undefined
  /** The time left in the engine step in progress (mean; EndpointGates.phase), ms. */
  readonly residualMs: number
  /** A decode step now, by the engines' step models (mean; step-timeline.ts), ms. */
  readonly decodeStepMs: number
}

/** When a request is forecast to be dispatched, and its first step (dispatch-forecast.ts). */
export interface QueuedAt {
  /** Undefined: not within the horizon. */
  readonly forecast: DispatchForecast | undefined
  /** How far the forecast looked, ms. */
  readonly horizonMs: number
}

export interface Prediction {
  /** The queue model's features on arrival; undefined when the request could go at once. */
  readonly queueFeatures: readonly number[] | undefined
  /** The wait in the gateway's queue. */
  readonly queueMs: number
  /** The time at the server, dispatch to first token. */
  readonly serverMs: number
  readonly totalMs: number
  /**
   * Admitted only by going ahead of the first-token promises of the requests sent before it
   * (gate.ts, breaksPromise): kept, it would miss its own objective; it is not held for them.
   */
  readonly overPromises?: boolean
}

const ERROR_ALPHA = 0.05
const RLS_FORGETTING = 0.995
const JOINED_ALPHA = 0.05
/** A step prior this far (relative) from the fit's seed re-seeds it (while it has few observations). */
const STEP_RESEED = 0.25
/** A server time over OUTLIER_FACTOR x the prediction plus OUTLIER_STEPS steps is an outlier ... */
const OUTLIER_FACTOR = 3
const OUTLIER_STEPS = 4
/** ... not learned while at most half of the last OUTLIER_WINDOW server times were outliers. */
const OUTLIER_WINDOW = 8

export class TtftEstimator {
  private rls: Rls
  private stepPriorMs: number
  /** The step the server part's fit was seeded with. */
  private seededStepMs: number
  private prefillPrior: number
  private serverSamples = 0
  /** D: the pool's dispatch rate from a backlogged queue. */
  private readonly rate: DispatchRate
  /**
   * Mean prompt tokens sent after a request that shared the step of its first token, for
   * requests queued on arrival (dispatched in bursts when the budget frees) and the others.
   */
  private joinedQueued = 0
  private joinedOnce = 0
  private samples = 0
  /** Of the last OUTLIER_WINDOW server times, which were outliers (a ring, and how many), and the count not learned. */
  private readonly recentOutliers: boolean[] = []
  private outlierAt = 0
  private recentOutlierCount = 0
  private outliersSkipped = 0
  private meanAbsErr = 0
  private meanErr = 0

  constructor(hints: EstimatorHints, clock: Clock) {
    this.stepPriorMs = hints.stepMs
    this.seededStepMs = hints.stepMs
    this.prefillPrior = hints.prefillTokensPerS
    this.rls = serverRls(hints)
    this.rate = new DispatchRate(clock, hints.prefillTokensPerS)
  }

  /**
   * What the engines are now known to be (their facts): the step time at once; the prefill
   * rate re-seeds the server part while it has few observations, and the dispatch rate's
   * prior while no backlog was measured.
   */
  adoptPriors(hints: EstimatorHints): void {
    this.stepPriorMs = hints.stepMs
    // a step far from the one the fit was seeded with: its γ was fitted to decode steps of
    // another scale (a slow engine's first samples priced at the default 15 ms step taught γ
    // 2.5, which then priced its real 114 ms step at 290 ms)
    const stepMoved = priorMoved(hints.stepMs, this.seededStepMs, STEP_RESEED)
    const moved = priorMoved(hints.prefillTokensPerS, this.prefillPrior)
    if (moved) {
      this.prefillPrior = hints.prefillTokensPerS
      this.rate.adoptPrior(hints.prefillTokensPerS)
    }
    if ((moved || stepMoved) && this.serverSamples < RESEED_BELOW) {
      this.rls = serverRls({ stepMs: hints.stepMs, prefillTokensPerS: this.prefillPrior })
      this.seededStepMs = hints.stepMs
      this.serverSamples = 0
    }
  }

  /** Server-side features of a request at an endpoint: [1, P, S, R]. */
  features(pendingTokens: number, ownTokens: number, stepMs: number | undefined, residualMs = 0): number[] {
    return [1, pendingTokens + ownTokens, stepMs ?? this.stepPriorMs, residualMs]
  }

  /**
   * The server time of a request of `ownTokens` on an idle endpoint (nothing pending, a
   * step as short as the prior): the least TTFT it can have. Above its objective, waiting
   * cannot help it.
   */
  idleServerMs(ownTokens: number): number {
    return this.serverMs(this.features(0, ownTokens, this.stepPriorMs))
  }

  /**
   * The least server time a request of `ownTokens` can have: the fit's idle server time, at
   * most what the engine's facts give (one step, and its prompt at the prefill rate).
   */
  leastServerMs(ownTokens: number): number {
    return Math.min(this.idleServerMs(ownTokens), this.stepPriorMs + (1000 * ownTokens) / this.prefillPrior)
  }

  /** The server time one more prompt token to compute costs, ms (the fitted slope; 0 at least). */
  msPerPromptToken(): number {
    return Math.max(0, (this.idleServerMs(1000) - this.idleServerMs(0)) / 1000)
  }

  /** One engine step, ms: the least time after which the servers' state has changed. */
  get stepMs(): number {
    return this.stepPriorMs
  }

  /** Prompt tokens per ms the pool dispatches from a backlogged queue (the pool's total; dispatch-rate.ts). */
  dispatchRate(): number {
    return this.rate.now()
  }

  /**
   * A request's TTFT, from the forecast of its dispatch (dispatch-forecast.ts) over the
   * servers as `view` sees them: `queued` false, it goes at once (its forecast the endpoint
   * it goes to now), else it waits in the queue (the forecast undefined: not within the
   * horizon). `computeTokens`: of its prompt, those the server must compute (not in its
   * prefix cache).
   */
  predict(view: ServerView, at: QueuedAt, computeTokens: number, queued: boolean): Prediction {
    const f = at.forecast
    if (!queued) {
      // those sent after it and before its step begins share that step (in the forecast's)
      const features =
        f === undefined
          ? this.features(
              view.pendingTokens + this.expectedJoined(false),
              computeTokens,
              view.decodeStepMs,
              view.residualMs,
            )
          : this.features(f.withTokens + view.foreignTokens, computeTokens, f.decodeStepMs, f.residualMs)
      const serverMs = this.serverMs(features)
      return { queueFeatures: undefined, queueMs: 0, serverMs, totalMs: serverMs }
    }
    const queueMs = f?.waitMs ?? at.horizonMs
    const queueFeatures = [1, queueMs]
    // its step: those dispatched with it, and the servers' own queues of other clients' requests
    const serverMs =
      f === undefined
        ? this.idleServerMs(computeTokens)
        : this.serverMs(
            this.features(f.withTokens + view.foreignTokens, computeTokens, f.decodeStepMs, f.residualMs),
          )
    return { queueFeatures, queueMs, serverMs, totalMs: queueMs + serverMs }
  }

  /** The server part for `features` (dispatch to first token), ms. */
  serverMs(features: readonly number[]): number {
    return Math.max(0, this.rls.predict(features))
  }

  /** Time for `tokens` of queued prompts to be dispatched: the honest Retry-After. */
  drainMs(tokens: number): number {
    return tokens / this.dispatchRate()
  }

  /** The pool's queue went from empty to backlogged, or back (`backlogged` false). */
  onBacklog(backlogged: boolean): void {
    this.rate.onBacklog(backlogged)
  }

  /** `tokens` of prompt were dispatched (the dispatch rate counts them while the queue is backlogged). */
  onDispatch(tokens: number): void {
    this.rate.onDispatch(tokens)
  }

  /** The prompt tokens sent after a request expected to share its prefill step (`queued`: it was queued on arrival). */
  expectedJoined(queued: boolean): number {
    return queued ? this.joinedQueued : this.joinedOnce
  }

  /** A request's first token: `tokens` sent after it shared its step (`queued`: it was queued on arrival). */
  onJoined(tokens: number, queued: boolean): void {
    if (queued) this.joinedQueued += JOINED_ALPHA * (tokens - this.joinedQueued)
    else this.joinedOnce += JOINED_ALPHA * (tokens - this.joinedOnce)
  }

  /**
   * Learns the server part from a streamed request: `features` at dispatch, `serverMs`
   * dispatch to first token. False when it was not learned: an outlier among times the
   * fit predicts (see the top of this file).
   */
  observeServer(features: readonly number[], serverMs: number): boolean {
    const outlier = serverMs > OUTLIER_FACTOR * this.serverMs(features) + OUTLIER_STEPS * this.stepPriorMs
    if (this.recentOutliers[this.outlierAt] === true) this.recentOutlierCount--
    if (outlier) this.recentOutlierCount++
    this.recentOutliers[this.outlierAt] = outlier
    this.outlierAt = (this.outlierAt + 1) % OUTLIER_WINDOW
    if (outlier && 2 * this.recentOutlierCount <= this.recentOutliers.length) {
      this.outliersSkipped++
      return false
    }
    this.rls.update(features, Math.max(0, serverMs))
    this.serverSamples++
    return true
  }

  /** Server times not learned as outliers (observeServer), since the start. */
  get outliersNotLearned(): number {
    return this.outliersSkipped
  }

  /** Judges a whole prediction against the observed TTFT (arrival to first token). */
  judge(predicted: Prediction, observedMs: number): void {
    const rel = (predicted.totalMs - observedMs) / Math.max(observedMs, 1)
    this.samples++
    this.meanAbsErr += ERROR_ALPHA * (Math.abs(rel) - this.meanAbsErr)
    this.meanErr += ERROR_ALPHA * (rel - this.meanErr)
  }

  state(): object {
    const [alpha, beta, gamma, delta] = this.rls.w
    return {
      model:
        'ttft = (queued ? forecast_wait_ms : 0) + alpha + beta * (prompt_tokens_in_its_step + own_tokens_to_compute) + gamma * decode_step_ms + delta * ms_left_in_the_step_in_progress',
      priors: { stepMs: round(this.stepPriorMs), prefillTokensPerS: Math.round(this.prefillPrior) },
      dispatchTokensPerMs: round(this.dispatchRate(), 3),
      alphaMs: round(alpha ?? 0),
      betaMsPerToken: round(beta ?? 0, 5),
      gammaSteps: round(gamma ?? 0, 3),
      deltaResidual: round(delta ?? 0, 3),
      joinedTokens: { queued: Math.round(this.joinedQueued), atOnce: Math.round(this.joinedOnce) },
      samples: this.samples,
      outliersNotLearned: this.outliersSkipped,
      meanAbsRelativeError: round(this.meanAbsErr, 3),
      meanRelativeError: round(this.meanErr, 3),
    }
  }
}

/**
 * The server part's fit from the hints. Prior spreads in units of the observation noise
 * (about one engine step): α within a few steps, β within twice its prior, γ within about one.
 */
function serverRls(hints: EstimatorHints): Rls {
  const step = hints.stepMs
  const beta = 1000 / hints.prefillTokensPerS
  return new Rls([0, beta, 1, 1], RLS_FORGETTING, [4, (2 * beta) / step, 1.5 / step, 1 / step])
}

function round(v: number, digits = 2): number {
  const f = 10 ** digits
  return Math.round(v * f) / f
}
