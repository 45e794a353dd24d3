/**
 * A pool's predictions for a request not yet placed: its TTFT were it placed now (in the
 * queue or dispatched at once), the honest Retry-After of a refusal, and whether its TTFT
 * objective can be met at all. Reads pool admission's parts, changes none of them; the
 * mean prompt of a request waiting at a server is the one thing it learns (learnPrompt).
 */
import type { PromptBlocks } from '../backends/prefix-index.js'
import type { BackendPool, EndpointView } from '../backends/types.js'
import type { Clock } from '../clock.js'
import { GatewayError } from '../errors.js'
import { emptyPromptTtftMs, type Objectives } from '../objectives.js'
import type { Ticket } from '../ticket.js'
import type { ArrivalRate } from './arrival-rate.js'
import type { ClassQueues } from './class-queues.js'
import { type EndpointNow, forecastDispatch } from './dispatch-forecast.js'
import { type Ahead, shedHopeless } from './early-refusal.js'
import type { ComputeAt, EndpointGates } from './gate.js'
import { type GateLimits, kvFits } from './headroom.js'
import type { PrefixAwareness } from './prefix-awareness.js'
import type { RunningRequests } from './running.js'
import type { Prediction, QueuedAt, ServerView, TtftEstimator } from './ttft-estimator.js'
import type { TtftObjectives } from './ttft-objectives.js'
import type { Waiting } from './waiting.js'

const PROMPT_ALPHA = 0.05
/** How far a forecast looks for a class without a TTFT objective, ms. */
const HORIZON_MS = 1000
/** A queued request's gate in its re-prediction: closed now (the dispatcher has just run). */
const NEVER_OPEN = () => false
/** The whole KV cache (a need beyond its free part means a preemption before the request ends). */
const WHOLE_CACHE: GateLimits = { maxKvUsage: 1, maxWaiting: 0, maxInflight: 0, prefillShare: 1 }

/** A request's prediction in a pool (predict()). */
export interface PoolPrediction {
  readonly prediction: Prediction
  /** Usable endpoints (0: no backend). */
  readonly usable: number
  /** No endpoint has KV room for it under its class's limit now. */
  readonly kvBlocked: boolean
  /** Its KV need is more than every endpoint's free cache. */
  readonly kvOvercommit: boolean
  /** The decode step it is predicted to stream at: the endpoints' live step, else the step fact, ms. */
  readonly stepMs: number
  /** What the endpoint holding most of its prefix would compute. */
  readonly leastComputeTokens: number
  /** Of its prompt, the tokens the servers are expected to compute (its prefix expected in their caches left out). */
  readonly computeTokens: number
  /**
   * Queued where a first-token promise closes an endpoint otherwise open to it: predicted
   * without the promises (`keepPromises` false), it may fare better. False otherwise (then
   * that prediction would be this one).
   */
  readonly heldByPromises: boolean
}

export interface PredictorParts {
  readonly pool: BackendPool
  readonly gates: EndpointGates
  readonly queues: ClassQueues<Waiting>
  readonly prefix: PrefixAwareness
  readonly estimator: TtftEstimator
  readonly running: RunningRequests
  readonly ttft: TtftObjectives
  readonly clock: Clock
  /** Prompt tokens arriving per class (arrival-rate.ts). */
  readonly arrivals: ArrivalRate
}

export class PoolPredictor {
  private readonly pool: BackendPool
  private readonly gates: EndpointGates
  private readonly queues: ClassQueues<Waiting>
  private readonly prefix: PrefixAwareness
  private readonly estimator: TtftEstimator
  private readonly running: RunningRequests
  private readonly ttft: TtftObjectives
  private readonly clock: Clock
  private readonly arrivals: ArrivalRate
  /** The mean prefill work of a request (what one waiting at a server costs), tokens. */
  meanPrompt = 512

  constructor(p: PredictorParts) {
    this.pool = p.pool
    this.gates = p.gates
    this.queues = p.queues
    this.prefix = p.prefix
    this.estimator = p.estimator
    this.running = p.running
    this.ttft = p.ttft
    this.clock = p.clock
    this.arrivals = p.arrivals
  }

  /** A request ended: the prompt tokens its server computed go into the mean. */
  learnPrompt(tokens: number): void {
    this.meanPrompt += PROMPT_ALPHA * (tokens - this.meanPrompt)
  }

  /** The servers as the estimator sees them now. */
  serverView(): ServerView {
    return this.gates.serverView(this.pool.views(), this.meanPrompt)
  }

  /**
   * Predicted TTFT for a new request of this class, were it placed now: dispatched at once
   * when nothing of its class or above is queued and an endpoint is open to it, else after
   * the prompts queued ahead of it. `kvBlocked`: no endpoint has KV room for this request
   * under its class's limit now (a refusal then says kv_exhausted rather than ttft_slo).
   * `blocks`: its prompt's blocks (prefix awareness): the server part prices only the
   * tokens not expected in the prefix cache of the endpoints it may go to (see
   * prefix-awareness.ts); `leastComputeTokens` is what the endpoint holding the most of it
   * would compute. `session`: its x-session-id (session affinity, when the pool routes by it).
   * `order`: its rank in its class's queue (its TTFT deadline): the queued requests of its
   * class it would go ahead of are not ahead of it. `keepPromises` false: were it not held
   * for the first-token promises of the requests sent before it (its prediction then says
   * `overPromises`, and the dispatcher does not hold it for them).
   */
  predict(
    className: string,
    promptTokens: number,
    kvTokens: number,
    blocks?: PromptBlocks,
    session?: string,
    order?: number,
    keepPromises = true,
  ): PoolPrediction {
    const views = this.pool.views()
    const view = this.gates.serverView(views, this.meanPrompt)
    const computeAt = this.prefix.computeAt(blocks, promptTokens)
    const open = this.gates.open(className, kvTokens, promptTokens, { computeAt, keepPromises })
    const blocked = !views.some(open)
    const kvBlocked =
      blocked && views.length > 0 && !views.some((v) => this.gates.kvFits(className, v, kvTokens))
    const ahead = this.queues.ahead(className, order)
    const queued = ahead.tokens > 0 || blocked ? ahead.tokens : undefined
    const requestsAhead = queued === undefined ? 0 : ahead.requests
    const hit =
      blocks === undefined
        ? undefined
        : this.prefix.expected(
            views,
            blocks,
            promptTokens,
            queued === undefined ? open : undefined,
            kvTokens,
            session,
          )
    const compute = promptTokens - (hit?.expected ?? 0)
    // going at once, it goes where the picker sends it among the endpoints open to it
    let goesTo: number | undefined
    if (queued === undefined && views.length > 1) {
      const request = blocks === undefined ? undefined : { blocks, promptTokens, session }
      const chosen = this.pool.pickView?.(views.filter(open), kvTokens, request)
      goesTo = chosen === undefined ? undefined : views.indexOf(chosen)
    }
    const queuedAhead = { tokens: queued ?? 0, requests: requestsAhead }
    const predicted = this.estimator.predict(
      view,
      this.forecast(className, views, queuedAhead, compute, kvTokens, open, goesTo),
      compute,
      queued !== undefined,
    )
    const prediction = keepPromises ? predicted : { ...predicted, overPromises: true }
    let heldByPromises = false
    if (keepPromises && queued !== undefined) {
      const free = this.gates.open(className, kvTokens, promptTokens, { computeAt, keepPromises: false })
      heldByPromises = views.some((v) => !open(v) && free(v))
    }
    return {
      prediction,
      usable: views.length,
      kvBlocked,
      kvOvercommit: views.length > 0 && !views.some((v) => kvFits(v, WHOLE_CACHE, kvTokens)),
      stepMs: view.stepMs ?? this.estimator.stepMs,
      leastComputeTokens: promptTokens - (hit?.best ?? 0),
      computeTokens: compute,
      heldByPromises,
    }
  }

  /**
   * When a request of `className` with `ahead` queued ahead of it and `computeTokens`
   * to compute is forecast to be dispatched (dispatch-forecast.ts), within twice its class's
   * TTFT objective (a second for a class without one); `goesTo`: the endpoint (index in
   * `views`) the picker would send it to now.
   */
  forecast(
    className: string,
    views: readonly EndpointView[],
    ahead: Ahead,
    computeTokens: number,
    kvTokens: number,
    open: (v: EndpointView) => boolean,
    goesTo?: number,
  ): QueuedAt {
    const horizonMs = this.horizonMs(className)
    const eps = this.endpointsNow(className, views, open, this.clock.now())
    const arriving = this.arrivingAt(className, views)
    const forecast = forecastDispatch(eps, ahead, computeTokens, kvTokens, arriving, horizonMs, goesTo)
    return { forecast, horizonMs }
  }

  /**
   * Prompt tokens of `className` arriving per ms at one of `views`: the picker spreads the
   * class's arrivals over the endpoints, so one endpoint's next step meets its share of them.
   */
  private arrivingAt(className: string, views: readonly EndpointView[]): number {
    return this.arrivals.tokensPerMs(className) / Math.max(1, views.length)
  }

  /** How far a forecast for `className` looks: twice its TTFT objective (a second without one). */
  private horizonMs(className: string): number {
    const slo = this.ttft.get(className)?.sloMs
    return slo === undefined ? HORIZON_MS : 2 * slo
  }

  /**
   * The endpoints as a forecast for `className` starts from them (EndpointGates.endpointsNow),
   * with when their running requests end.
   */
  private endpointsNow(
    className: string,
    views: readonly EndpointView[],
    open: (v: EndpointView) => boolean,
    now: number,
  ): EndpointNow[] {
    return this.gates.endpointsNow(className, views, open, (e) => this.running.ends(e, now))
  }

  /**
   * The honest Retry-After for a request of this class refused now: when it is predicted
   * to be possible. The queue ahead of it must drain (at the measured dispatch rate) and
   * an endpoint must open for it (the earliest one: see EndpointGates.reopenInMs). Never
   * less than one engine step: nothing changes sooner.
   */
  retryAfterMs(className: string, promptTokens: number, kvTokens: number): number {
    const drain = this.estimator.drainMs(this.queues.costAhead(className))
    let reopen = Number.POSITIVE_INFINITY
    const slotFree = (endpoint: string) => this.slotFreeInMs(endpoint)
    for (const v of this.pool.views()) {
      reopen = Math.min(reopen, this.gates.reopenInMs(v, className, kvTokens, promptTokens, slotFree))
    }
    if (!Number.isFinite(reopen)) reopen = this.pool.retryAfterMs() // no usable endpoint
    return Math.max(this.estimator.stepMs, drain + reopen)
  }

  /** When `v` is expected to open for a request of `className` (0: open now; EndpointGates.reopenInMs). */
  reopenInMs(
    v: EndpointView,
    className: string,
    kvTokens: number,
    promptTokens: number,
    computeAt?: ComputeAt,
  ): number {
    return this.gates.reopenInMs(v, className, kvTokens, promptTokens, (e) => this.slotFreeInMs(e), computeAt)
  }

  /** When the first request running at `endpoint` is expected to end (its step: live, else the prior). */
  private slotFreeInMs(endpoint: string): number {
    const step = this.gates.itl(endpoint) ?? this.estimator.stepMs
    return this.running.firstEndInMs(endpoint, step, this.clock.now(), (w) =>
      w.ticket.dispatchedAt === undefined || w.serverFeatures === undefined
        ? undefined
        : w.ticket.dispatchedAt + this.estimator.serverMs(w.serverFeatures),
    )
  }

  /**
   * Request `t`'s admission `budget` under a length-aware objective, raised where its
   * prediction `predictedMs` is over it but within its own objective
   * (TtftObjectives.lengthBudget): a prompt of one token arriving with it is predicted at
   * its own place in the queue (an empty prompt's deadline), to tell the wait every length
   * shares from what its length adds. Predicted at this prompt's place instead (later by its
   * prefill), the one-token prompt waited behind the prompts queued between the two
   * deadlines, and that wait was charged to every length: bench:admission's length-aware
   * workload, gateway only, three rounds each at 2x, refused the longest prompts 1.8x as
   * often as the shortest (61% against 34%), 1.3x with it (53% against 41%). No second
   * prediction otherwise: an objective that is not length-aware budgets the same as its own,
   * so a prediction over the one is over the other.
   */
  lengthBudget(
    className: string,
    objectives: Objectives,
    t: Ticket,
    budget: number,
    predictedMs: number,
    outputTokens: number,
  ): number {
    if (predictedMs <= budget || predictedMs > this.ttft.budget(className, objectives.ttft_ms)) return budget
    const empty = emptyPromptTtftMs(objectives, t.promptTokens)
    if (empty === undefined) return budget
    const short = this.predict(className, 1, 1 + outputTokens, undefined, t.sessionId, t.arrivedAt + empty)
    return this.ttft.lengthBudget(
      className,
      objectives,
      t.promptTokens,
      budget,
      predictedMs,
      short.prediction.totalMs,
    )
  }

  /**
   * The least TTFT a request of `promptTokens` can have here (an idle endpoint), when that
   * is above its TTFT objective `sloMs` (default: its class's): waiting cannot help it.
   * Undefined when it can be met, and for a class not refused on its predicted TTFT.
   */
  unreachableMs(className: string, promptTokens: number, sloMs?: number): number | undefined {
    const c = this.ttft.get(className)
    const slo = sloMs ?? c?.sloMs
    if (c === undefined || slo === undefined) return undefined
    const idle = this.estimator.leastServerMs(promptTokens)
    return idle > slo ? idle : undefined
  }

  /**
   * Removes from the queues the requests predicted to miss their TTFT objective now
   * (early-refusal.ts) and hands each, with its refusal, to `refuse`, class by class.
   * Returns how many.
   */
  refuseHopeless(now: number, refuse: (w: Waiting, error: GatewayError) => void): number {
    const views = this.pool.views()
    let n = 0
    for (const [name, c] of this.ttft.entries()) {
      const queued = this.queues.sizeOf(name)
      if (queued === 0) continue
      // the endpoints as each queued request's forecast starts from them, once for the class:
      // none is open to it now (the dispatcher has just run)
      const eps = this.endpointsNow(name, views, NEVER_OPEN, now)
      const arriving = this.arrivingAt(name, views)
      const horizonMs = this.horizonMs(name)
      const queueWaitMs = (w: Waiting, ahead: Ahead) =>
        forecastDispatch(eps, ahead, w.computeTokens ?? w.promptTokens, w.kvTokens, arriving, horizonMs)
          ?.waitMs ?? horizonMs
      for (const h of shedHopeless(this.queues, name, c.sloMs, now, queueWaitMs)) {
        const { item: w, predictedMs } = h
        n++
        refuse(
          w,
          new GatewayError(
            'GW_ERR_TTFT_SLO',
            { class: name, predicted: Math.round(predictedMs) },
            { retryAfterMs: this.retryAfterMs(name, w.promptTokens, w.kvTokens) },
          ),
        )
      }
    }
    return n
  }

  /**
   * Classes whose TTFT objective no request can meet here: even a one-token prompt on an
   * idle endpoint is predicted slower (by the estimator's current fit, at most the engine's facts).
   */
  unreachableObjectives(): { class: string; sloMs: number; idleTtftMs: number }[] {
    const out: { class: string; sloMs: number; idleTtftMs: number }[] = []
    for (const [name, c] of this.ttft.entries()) {
      const idle = this.unreachableMs(name, 1)
      if (idle !== undefined) out.push({ class: name, sloMs: c.sloMs, idleTtftMs: Math.round(idle) })
    }
    return out
  }
}
