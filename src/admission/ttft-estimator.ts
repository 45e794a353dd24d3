/**
 * The TTFT estimator of one pool, engine-agnostic. A request's TTFT is its wait in the
 * gateway's queue plus its time at the server, and each part is estimated from what
 * drives it:
 *
 *   TTFT = queue wait + server time
 *   queue wait  = 0 when the request can be dispatched at once, else  κ + ν · B + (λ · Q + μ · O) / D
 *   server time = α + β · P + γ · S + δ · R
 *
 *   Q = prompt tokens queued in the gateway ahead of this request (its class and those
 *       above);
 *   O = its own prompt tokens, when something is queued ahead of it (0 at the head: B says its wait);
 *   B = the time until the prefill budget has room for it: the prompts pending at the
 *       endpoint are expected to have their first tokens at the server time this model
 *       predicted for each when it was dispatched (a full budget, or a long prompt, holds
 *       the queue until then);
 *   D = the pool's dispatch rate: prompt tokens per ms it released from a backlogged queue,
 *       measured (a moving ratio of tokens over time); the queue drains at the pace the
 *       dispatch gates allow, whatever holds them (prefill budget, KV, decode guard);
 *   P = prompt tokens at the endpoint not yet prefilled (the gateway's prefill ledger, or
 *       the server's own waiting queue when that is longer) plus this request's prompt
 *       tokens the server must compute: its prompt minus the prefix the server is expected
 *       to hold in its prefix cache (prefix-awareness.ts; the whole prompt when prefix
 *       awareness is off); for a request that must queue, the pending part is the mean
 *       that queued requests met when dispatched (plus what waits at the servers beyond
 *       the gateway's own requests); and the prompts expected to be sent after it and
 *       before its step begins, which share that step (an engine takes all it has into its
 *       next step; queued requests are dispatched in bursts): the mean that joined the step
 *       of a request queued on arrival, or of one not, learned at each first token, when the
 *       fit learns from the tokens that did join;
 *   S = the endpoint's engine step time now (its streams' live inter-token latency): a
 *       request is prefilled in a step as long as the running batch and the other prompts
 *       in it make it;
 *   R = the time left in the step in progress, which a request sent now waits for first:
 *       the gateway sees each step end (the token it brings every stream there), so it
 *       knows when the step in progress began and which of its prompts the server took into
 *       it (those sent before; they are left out of P): R = S + their prefill − the time
 *       since the step began, at least 0 (EndpointGates.phase). For a request that must
 *       queue, the mean R that queued requests met at dispatch. Without R, γ priced a mean
 *       half step in progress where it may be a long prefill nearly done or just begun.
 *
 * κ (the wait for a gate to open when nothing is queued ahead: a decode window to close),
 * λ, μ and ν start at 0, 1, 1 and 1 and are fitted online by recursive least
 * squares to every queued request's wait (arrival to dispatch) of the classes refused on
 * their prediction (a batch request waits for backfill, which is not predicted), and to the
 * least wait of those refused from the queue where it passes their prediction (their wait
 * so far, plus what was still ahead at the measured dispatch rate; fitted to the dispatched
 * alone, the model would know only the short waits); α (fixed
 * cost: the network, scheduling), β (ms per prompt token), γ (steps) and δ start from the
 * config hints (0, 1 / prefill tokens/s, 1.5, 1) and are fitted to every streamed request's
 * time from dispatch to first token, of every class (the engine does not know classes, and
 * so the fit keeps learning while a class is refused), against the P, S and R its endpoint
 * had at dispatch. D starts from the prefill hint. The error is judged on the whole
 * prediction (arrival to first token) of the classes refused on it.
 *
 * The hints are the engines' facts (src/backends/engine-facts.ts): the priors from config
 * or the defaults at first, then what is learned of the engines (adoptPriors). A new
 * prefill rate re-seeds the server part only while it has fewer than RESEED_BELOW
 * observations of its own (after that its fit knows better); the step time is always the
 * latest (the idle prediction, the S of an endpoint not measured now).
 */
import type { Clock } from '../clock.js'
import { DispatchRate } from './dispatch-rate.js'
import { Rls } from './rls.js'

export interface EstimatorHints {
  /** One engine step with a small batch, ms (S when nothing is measured). */
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
}

export interface Prediction {
  /** The queue model's features on arrival; undefined when the request could go at once. */
  readonly queueFeatures: readonly number[] | undefined
  /** The wait in the gateway's queue. */
  readonly queueMs: number
  /** The time at the server, dispatch to first token. */
  readonly serverMs: number
  readonly totalMs: number
}

const ERROR_ALPHA = 0.05
const RLS_FORGETTING = 0.995
const PENDING_ALPHA = 0.05
/**
 * How far λ, μ and ν may start from 1, per step of noise. Their features are waits of
 * hundreds of ms where κ's is 1, so a wide spread lets the first few waits (the short ones
 * of the requests that did get through) throw the slopes far from the queue's structure
 * (a queue drains at its dispatch rate, behind a full budget) and make a cold start
 * admit what it cannot serve; tight, a miss is first taken up by κ and the slopes move
 * only as waits of many sizes accumulate.
 */
const QUEUE_SPREAD = 0.1
/** Server observations under which a new prefill prior re-seeds the server part's fit. */
export const RESEED_BELOW = 8
/** A prior that moved by less than this (relative) is not adopted. */
const PRIOR_CHANGE = 0.05

export class TtftEstimator {
  private rls: Rls
  private readonly queueRls: Rls
  private stepPriorMs: number
  private prefillPrior: number
  private serverSamples = 0
  /** D: the pool's dispatch rate from a backlogged queue. */
  private readonly rate: DispatchRate
  /** Mean prompt tokens pending at the endpoint when a queued request was dispatched. */
  private queuedPending = 0
  /** Mean time left in the engine's step then, ms. */
  private queuedResidual = 0
  /**
   * Mean prompt tokens sent after a request that shared the step of its first token, for
   * requests queued on arrival (dispatched in bursts when the budget frees) and the others.
   */
  private joinedQueued = 0
  private joinedOnce = 0
  private samples = 0
  private meanAbsErr = 0
  private meanErr = 0

  constructor(hints: EstimatorHints, clock: Clock) {
    this.stepPriorMs = hints.stepMs
    this.prefillPrior = hints.prefillTokensPerS
    this.rls = serverRls(hints)
    const step = hints.stepMs
    this.queueRls = new Rls([0, 1, 1, 1], RLS_FORGETTING, [
      4,
      QUEUE_SPREAD / step,
      QUEUE_SPREAD / step,
      QUEUE_SPREAD / step,
    ])
    this.rate = new DispatchRate(clock, hints.prefillTokensPerS)
  }

  /**
   * What the engines are now known to be (their facts): the step time at once; the prefill
   * rate re-seeds the server part while it has few observations, and the dispatch rate's
   * prior while no backlog was measured.
   */
  adoptPriors(hints: EstimatorHints): void {
    this.stepPriorMs = hints.stepMs
    const moved = Math.abs(hints.prefillTokensPerS - this.prefillPrior) > PRIOR_CHANGE * this.prefillPrior
    if (!moved) return
    this.prefillPrior = hints.prefillTokensPerS
    if (this.serverSamples < RESEED_BELOW) {
      this.rls = serverRls(hints)
      this.serverSamples = 0
    }
    this.rate.adoptPrior(hints.prefillTokensPerS)
  }

  /** Server-side features of a request at an endpoint: [1, P, S, R]. */
  features(pendingTokens: number, ownTokens: number, stepMs: number | undefined, residualMs = 0): number[] {
    return [1, pendingTokens + ownTokens, stepMs ?? this.stepPriorMs, residualMs]
  }

  /**
   * The time left in an engine step begun `ageMs` ago, at a live step time of `stepMs`, that
   * took `inStepTokens` of prompt to prefill: its expected length (a step, and those tokens at
   * the fitted prefill cost) less its age; 0 once that is past (an idle engine begins a step
   * when a request comes).
   */
  residualMs(stepMs: number | undefined, inStepTokens: number, ageMs: number): number {
    const length = (stepMs ?? this.stepPriorMs) + this.msPerPromptToken() * inStepTokens
    return Math.max(0, length - ageMs)
  }

  /**
   * The server time of a request of `ownTokens` on an idle endpoint (nothing pending, a
   * step as short as the prior): the least TTFT it can have. Above its objective, waiting
   * cannot help it.
   */
  idleServerMs(ownTokens: number): number {
    return this.serverMs(this.features(0, ownTokens, this.stepPriorMs))
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
   * The queue part for a request already queued (early refusal's re-prediction): at the
   * measured rate, the current gap left out. An arrival is refused when in doubt (a gap
   * longer than usual counts, see dispatchRate); a request already waiting is refused only
   * when the queue as measured says it cannot make it, not on a gap that may end now.
   */
  queuedWaitMs(aheadTokens: number, ownTokens: number): number {
    return this.queueMs(queueFeatures(aheadTokens, ownTokens, this.rate.measuredRate(), 0))
  }

  private queueMs(features: readonly number[]): number {
    return Math.max(0, this.queueRls.predict(features))
  }

  /**
   * `aheadTokens`: prompt tokens queued ahead of this request; undefined when it goes at
   * once. `roomMs`: time until the prefill budget has room for it (B). `computeTokens`: of
   * its `ownTokens`, those the server must compute (not in its prefix cache): the server
   * part prices those; the queue part drains whole prompts, as the dispatch rate counts them.
   */
  predict(
    view: ServerView,
    aheadTokens: number | undefined,
    ownTokens: number,
    roomMs = 0,
    computeTokens = ownTokens,
  ): Prediction {
    const queued =
      aheadTokens === undefined
        ? undefined
        : queueFeatures(aheadTokens, ownTokens, this.dispatchRate(), roomMs)
    const queueMs = queued === undefined ? 0 : this.queueMs(queued)
    // A queued request is dispatched when its endpoint has room: it will not meet the
    // prompts pending there now but what queued requests typically meet at dispatch, and
    // the servers' own queues of other clients' requests, which stay ahead of it.
    const pending =
      (queued === undefined ? view.pendingTokens : this.queuedPending + view.foreignTokens) +
      this.expectedJoined(queued !== undefined)
    const residual = queued === undefined ? view.residualMs : this.queuedResidual
    const serverMs = this.serverMs(this.features(pending, computeTokens, view.stepMs, residual))
    return { queueFeatures: queued, queueMs, serverMs, totalMs: queueMs + serverMs }
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

  /**
   * `tokens` of prompt were dispatched to an endpoint that had `pendingTokens` not yet
   * prefilled (beyond those in the step in progress) and `residualMs` left in that step;
   * `queued`: the request had waited in the queue.
   */
  onDispatch(tokens: number, pendingTokens: number, queued: boolean, residualMs = 0): void {
    if (queued) {
      this.queuedPending += PENDING_ALPHA * (pendingTokens - this.queuedPending)
      this.queuedResidual += PENDING_ALPHA * (residualMs - this.queuedResidual)
    }
    this.rate.onDispatch(tokens)
  }

  /** The prompt tokens sent after a request expected to share its prefill step (`queued`: it was queued on arrival). */
  expectedJoined(queued: boolean): number {
    return queued ? this.joinedQueued : this.joinedOnce
  }

  /** A request's first token: `tokens` sent after it shared its step (`queued`: it was queued on arrival). */
  onJoined(tokens: number, queued: boolean): void {
    if (queued) this.joinedQueued += PENDING_ALPHA * (tokens - this.joinedQueued)
    else this.joinedOnce += PENDING_ALPHA * (tokens - this.joinedOnce)
  }

  /** Learns the queue model from a request that was queued on arrival and has been dispatched. */
  observeQueue(predicted: Prediction, waitedMs: number): void {
    if (predicted.queueFeatures !== undefined)
      this.queueRls.update(predicted.queueFeatures, Math.max(0, waitedMs))
  }

  /**
   * Learns the queue model from a request that was queued on arrival and refused before its
   * dispatch (early refusal, or its deadline), whose wait would have been at least
   * `impliedMs` (what it waited, plus, for an early refusal, what was still ahead of it at
   * the measured dispatch rate), where that passes its prediction: a censored sample. Without
   * these the model learns only from the requests that got through, the short waits, and
   * keeps admitting into the queue what it will shed.
   */
  observeQueueRefused(predicted: Prediction, impliedMs: number): void {
    if (predicted.queueFeatures !== undefined && impliedMs > predicted.queueMs)
      this.queueRls.update(predicted.queueFeatures, impliedMs)
  }

  /** Learns the server part from a streamed request: `features` at dispatch, `serverMs` dispatch to first token. */
  observeServer(features: readonly number[], serverMs: number): void {
    this.rls.update(features, Math.max(0, serverMs))
    this.serverSamples++
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
    const [kappa, lambda, mu, nu] = this.queueRls.w
    return {
      model:
        'ttft = (queued ? kappa + nu * ms_until_prefill_budget_has_room + (lambda * prompt_tokens_ahead + mu * own_prompt_tokens) / dispatch_rate : 0) + alpha + beta * ((queued ? pending_at_dispatch : pending_prompt_tokens) + own_tokens_to_compute) + gamma * step_ms + delta * (queued ? residual_at_dispatch : ms_left_in_the_step_in_progress)',
      priors: { stepMs: round(this.stepPriorMs), prefillTokensPerS: Math.round(this.prefillPrior) },
      dispatchTokensPerMs: round(this.dispatchRate(), 3),
      queuedPendingTokens: Math.round(this.queuedPending),
      kappaMs: round(kappa ?? 0),
      lambda: round(lambda ?? 0, 3),
      mu: round(mu ?? 0, 3),
      nu: round(nu ?? 0, 3),
      alphaMs: round(alpha ?? 0),
      betaMsPerToken: round(beta ?? 0, 5),
      gammaSteps: round(gamma ?? 0, 3),
      deltaResidual: round(delta ?? 0, 3),
      queuedResidualMs: round(this.queuedResidual),
      joinedTokens: { queued: Math.round(this.joinedQueued), atOnce: Math.round(this.joinedOnce) },
      samples: this.samples,
      meanAbsRelativeError: round(this.meanAbsErr, 3),
      meanRelativeError: round(this.meanErr, 3),
    }
  }
}

/**
 * The queue part's features: [1, Q / D, O / D, B], O / D only behind a queue (Q > 0). At the
 * head of the queue a request goes as soon as the prefill budget has room for it, which B
 * already says (the time until its own tokens fit); its own size at the dispatch rate on top
 * counted that twice, and priced a long prompt at the head of an empty queue hundreds of ms
 * above its wait (70B: 2-3k-token prompts refused at 460-820 ms predicted, served in 150-290).
 * Behind a queue, the budget fills with the requests ahead and frees for its own at about
 * the dispatch rate: O / D is that wait.
 */
function queueFeatures(aheadTokens: number, ownTokens: number, rate: number, roomMs: number): number[] {
  return [1, aheadTokens / rate, aheadTokens > 0 ? ownTokens / rate : 0, roomMs]
}

/**
 * The server part's fit from the hints. Prior spreads in units of the observation noise
 * (about one engine step): α within a few steps, β within twice its prior, γ within about one.
 */
function serverRls(hints: EstimatorHints): Rls {
  const step = hints.stepMs
  const beta = 1000 / hints.prefillTokensPerS
  return new Rls([0, beta, 1.5, 1], RLS_FORGETTING, [4, (2 * beta) / step, 1.5 / step, 1 / step])
}

function round(v: number, digits = 2): number {
  const f = 10 ** digits
  return Math.round(v * f) / f
}
