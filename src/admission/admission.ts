/**
 * Admission: the decision at arrival, in microseconds, for every generation request, and
 * the lease it leads to (now, or later from the pool's queue).
 *
 *   1. classify (header, service_tier, tenant default, interactive)
 *   2. reserve prompt + n x expected output of KV (the prompt's tokens come from parse)
 *   3. predict TTFT in the pool (queue ahead + server TTFT)
 *   4. admit if predicted <= SLO x (1 - margin); else walk the class's degrade ladder,
 *      re-predicting after each step; else refuse with 503 and an honest Retry-After.
 *      A class that may not be refused for TTFT (batch) is queued until its deadline.
 */
import type { PromptBlocks } from '../backends/prefix-index.js'
import type { BackendPool, Backends } from '../backends/types.js'
import type { Clock, TimerClock } from '../clock.js'
import type { GatewayConfig } from '../config/schema.js'
import { GatewayError } from '../errors.js'
import { type Objectives, objectivesFor } from '../objectives.js'
import type { JsonBody } from '../openai/request-fields.js'
import { INITIAL_CHARS_PER_TOKEN, type TokenEstimator } from '../openai/token-estimator.js'
import type { Ticket } from '../ticket.js'
import { classify } from './classify.js'
import { applyStep } from './degrade/registry.js'
import type { DegradableRequest } from './degrade/types.js'
import type { AdmissionControl, Admitted, QueueDepth } from './face.js'
import { forecast } from './forecast.js'
import { walkLadder } from './ladder.js'
import { acquireDirect, noBackend } from './pass-through.js'
import { PoolAdmission, Waiting } from './pool-admission.js'
import {
  type AdmissionLogger,
  warnServerWaits,
  warnUnreachableTpot,
  warnUnreachableTtft,
} from './startup-warnings.js'
import type { Prediction } from './ttft-estimator.js'

export type { AdmissionLogger }

export interface AdmitInput {
  readonly ticket: Ticket
  readonly body: JsonBody
  readonly pool: BackendPool
  readonly tenantDefaultClass?: string | undefined
  readonly tenantWeight?: number | undefined
}

export type Decision =
  | { readonly kind: 'reject'; readonly error: GatewayError }
  | {
      readonly kind: 'admit'
      readonly poolAdmission: PoolAdmission
      readonly className: string
      /** The tenant's fair-share weight in the class queue. */
      readonly weight: number
      readonly deadline: number
      /** Its rank in its class's queue: its TTFT deadline (ClassQueues' EnqueueRequest.order). */
      readonly order: number | undefined
      readonly promptTokens: number
      /** Of its prompt, the tokens the servers are expected to compute (not in their prefix caches). */
      readonly computeTokens: number
      readonly kvTokens: number
      readonly prediction: Prediction
      /** Its prompt's blocks, when the pool is prefix-aware (recorded where it is dispatched). */
      readonly blocks: PromptBlocks | undefined
    }

/** What request `t` is admitted and queued by in `pa` (TtftObjectives.admitBy). */
function admitBy(pa: PoolAdmission, t: Ticket, className: string, objectives: Objectives) {
  return pa.ttft.admitBy(className, objectives, t.promptTokens, t.arrivedAt, pa.estimator.msPerPromptToken())
}

export class Admission implements AdmissionControl {
  private readonly config: GatewayConfig
  private readonly backends: Backends
  private readonly clock: Clock
  private readonly pools = new Map<BackendPool, PoolAdmission>()
  private readonly classNames: ReadonlySet<string>
  private readonly tokens: TokenEstimator | undefined
  private readonly logger: AdmissionLogger | undefined
  /** Unreachable TPOT objectives already logged (pool, class). */
  private readonly tpotWarned = new Set<string>()
  /** Pools whose late first tokens were logged (warnServerWaits). */
  private readonly waitsWarned = new Set<string>()
  private readonly timers: TimerClock | undefined

  /** `timers`: who runs the dispatcher and deadlines later (default: Node's timers; plan: its virtual clock). */
  constructor(
    config: GatewayConfig,
    backends: Backends,
    clock: Clock,
    tokens?: TokenEstimator,
    logger?: AdmissionLogger,
    timers?: TimerClock,
  ) {
    this.config = config
    this.backends = backends
    this.clock = clock
    this.timers = timers
    this.tokens = tokens
    this.classNames = new Set(Object.keys(config.classes))
    this.logger = logger
    for (const pool of backends.pools()) {
      const pa = this.poolAdmission(pool)
      warnUnreachableTtft(pa, config, logger)
      warnUnreachableTpot(pa, this.tpotWarned, logger)
    }
  }

  poolAdmission(pool: BackendPool): PoolAdmission {
    let pa = this.pools.get(pool)
    if (pa === undefined) {
      pa = new PoolAdmission(pool, this.config.classes, this.config.admission, this.clock, this.timers)
      this.pools.set(pool, pa)
    }
    return pa
  }

  /**
   * Admission's face: a lease now, a lease later (the request waits in its pool's queue),
   * or a refusal. Requests that do not generate (embeddings, other /v1/* routes) get a
   * lease on the least-loaded endpoint, or no_backend.
   */
  admit(ticket: Ticket, body: JsonBody | undefined, pool: BackendPool | undefined): Admitted {
    if (pool === undefined || body === undefined || !ticket.generation) return acquireDirect(ticket, pool)
    const d = this.decide({
      ticket,
      body,
      pool,
      tenantDefaultClass: ticket.tenantDefaultClass,
      tenantWeight: ticket.tenantWeight,
    })
    if (d.kind === 'reject') return d.error
    const w = new Waiting(ticket, d.className, d.promptTokens, d.kvTokens, d.prediction, d.blocks)
    w.computeTokens = d.computeTokens
    return d.poolAdmission.place(w, ticket.tenant, d.weight, d.deadline, d.order)
  }

  /** The decision alone: classify, predict, degrade, and admit or refuse (no side effect on queues). */
  decide(input: AdmitInput): Decision {
    const { ticket: t, body } = input
    const asked = classify(t.requestedClass, t.serviceTier, input.tenantDefaultClass, this.classNames)
    if (asked instanceof GatewayError) return { kind: 'reject', error: asked }
    let className = asked
    t.class = className
    let cls = this.config.classes[className]!
    // the request's own objectives (its tenant's, where it overrides the class's): what it
    // is admitted, queued, timed and judged by
    let objectives = objectivesFor(t, className, cls)
    t.slo = objectives
    const req: DegradableRequest = {
      body,
      api: t.api,
      pool: input.pool,
      expectedOutput: t.expectedOutputTokens,
      choices: typeof body.n === 'number' && body.n > 1 ? Math.floor(body.n) : 1,
    }
    const promptTokens = t.promptTokens
    let slo = objectives.ttft_ms

    let pa = this.poolAdmission(req.pool)
    pa.shedHopeless()
    let { budget, order } = admitBy(pa, t, className, objectives)
    let kvTokens = promptTokens + req.choices * req.expectedOutput
    let blocks = this.blocksFor(pa, t, body)
    let pp = pa.predictor.predict(className, promptTokens, kvTokens, blocks, t.sessionId, order)
    if (pp.usable === 0) return this.noBackend(t, req.pool)
    pa.arrived(className, pp.leastComputeTokens)
    // a long prompt under a length-aware objective: its budget, by what its length adds now
    const lengthAware = () => {
      budget = pa.predictor.lengthBudget(
        className,
        objectives,
        t,
        budget,
        pp.prediction.totalMs,
        req.expectedOutput,
      )
    }
    lengthAware()
    if (
      cls.reject_on_ttft &&
      pp.heldByPromises &&
      pp.prediction.queueMs > 0 &&
      pp.prediction.totalMs > budget
    ) {
      // Queued for the first-token promises of requests sent before it (first-token-promise.ts),
      // it would miss its own objective: it goes ahead of them rather than be degraded or
      // refused (their objectives still hold by their own margins; only their predictions
      // were tighter).
      const keepPromises = false
      const over = pa.predictor.predict(
        className,
        promptTokens,
        kvTokens,
        blocks,
        t.sessionId,
        order,
        keepPromises,
      )
      if (over.prediction.totalMs <= budget) pp = over
    }
    const margin = this.config.admission.margin
    // what it is predicted to miss now: TTFT, KV room, TPOT, E2E (forecast.ts)
    const threats = () =>
      forecast({
        ttftMs: pp.prediction.totalMs,
        ttftBudgetMs: budget,
        kvBlocked: pp.kvBlocked,
        kvOvercommit: pp.kvOvercommit,
        stepMs: pp.stepMs,
        outputTokens: req.expectedOutput,
        tpotMs: objectives.tpot_ms,
        e2eMs: objectives.e2e_ms,
        margin,
      }).threats
    let lost = false
    const applied = walkLadder(cls.reject_on_ttft ? cls.degrade : [], threats, (step) => {
      if (step.action === 'demote_to_batch') {
        // queued in the other class instead of refused, where the tenant or request allows it
        const to = this.config.classes[step.class]
        if (!t.demotable || to === undefined || step.class === className) return 'skipped'
        if (t.tenantAllowedClasses !== undefined && !t.tenantAllowedClasses.has(step.class)) return 'skipped'
        className = step.class
        t.class = className
        cls = to
        objectives = objectivesFor(t, className, cls)
        t.slo = objectives
        slo = objectives.ttft_ms
        ;({ budget, order } = admitBy(pa, t, className, objectives))
        pp = pa.predictor.predict(className, promptTokens, kvTokens, blocks, t.sessionId, order)
        lost ||= pp.usable === 0
        if (!lost) lengthAware()
        // the rest of the ladder is the interactive class's: the demoted request is done with it
        return 'done'
      }
      if (!applyStep(req, step, { route: (m) => this.backends.route(m) })) return 'skipped'
      const before = pa
      pa = this.poolAdmission(req.pool)
      // another pool cuts its own blocks, and prefills at its own rate: a length-aware
      // objective's budget and queue order say so
      if (pa !== before) blocks = this.blocksFor(pa, t, body)
      ;({ budget, order } = admitBy(pa, t, className, objectives))
      kvTokens = promptTokens + req.choices * req.expectedOutput
      pp = pa.predictor.predict(className, promptTokens, kvTokens, blocks, t.sessionId, order)
      lost ||= pp.usable === 0
      if (!lost) lengthAware()
      return lost ? 'done' : 'applied'
    })
    t.degraded.push(...applied)
    if (lost) return this.noBackend(t, req.pool)
    const p = pp.prediction
    const { kvBlocked, leastComputeTokens } = pp
    t.predictedTtftMs = p.totalMs
    if (req.pool !== input.pool) {
      t.poolName = req.pool.name
      t.servedModel = typeof body.model === 'string' ? body.model : undefined
    }
    if (req.expectedOutput !== t.expectedOutputTokens) {
      t.maxTokens = req.expectedOutput
      t.expectedOutputTokens = req.expectedOutput
    }
    if (cls.reject_on_ttft && p.totalMs > budget) {
      // Its prompt alone is too long for the objective, even on an idle server (holding as
      // much of it cached as any endpoint is expected to): no wait helps (and it is never
      // let in as a probe, which would only fail at the server).
      const idleMs = pa.predictor.unreachableMs(className, leastComputeTokens, slo)
      if (idleMs !== undefined) {
        const error = new GatewayError('GW_ERR_TTFT_UNREACHABLE', {
          class: className,
          slo: slo ?? 0,
          predicted: Math.round(idleMs),
          tokens: promptTokens,
        })
        return { kind: 'reject', error }
      }
      if (!pa.probeDue(className)) {
        const retryAfterMs = Math.max(
          p.totalMs - budget,
          pa.predictor.retryAfterMs(className, promptTokens, kvTokens),
        )
        // When no endpoint has KV room for it, say so: the wait is for the cache, not the queue.
        const error = kvBlocked
          ? new GatewayError('GW_ERR_KV_EXHAUSTED', {}, { retryAfterMs })
          : new GatewayError(
              'GW_ERR_TTFT_SLO',
              { class: className, predicted: Math.round(p.totalMs) },
              { retryAfterMs },
            )
        return { kind: 'reject', error }
      }
    }
    const now = this.clock.now()
    // Queued, a request is shed once it can no longer meet its objectives.
    let waitBudget = cls.max_queue_wait_ms
    if (slo !== undefined) waitBudget = Math.min(waitBudget, slo - p.serverMs)
    if (objectives.e2e_ms !== undefined) waitBudget = Math.min(waitBudget, objectives.e2e_ms)
    return {
      kind: 'admit',
      poolAdmission: pa,
      className,
      weight: input.tenantWeight !== undefined && input.tenantWeight > 0 ? input.tenantWeight : 1,
      deadline: now + Math.max(0, waitBudget),
      order,
      promptTokens,
      computeTokens: pp.computeTokens,
      kvTokens,
      prediction: p,
      blocks,
    }
  }

  /** The prompt's blocks for `pa`'s prefix index, cut at the model's characters per token. */
  private blocksFor(pa: PoolAdmission, t: Ticket, body: JsonBody): PromptBlocks | undefined {
    const cpt = this.tokens?.charsPerToken(t.model ?? '') ?? INITIAL_CHARS_PER_TOKEN
    return pa.prefix.blocksFor(body, t, cpt, pa.pool.endpoints())
  }

  private noBackend(t: Ticket, pool: BackendPool): Decision {
    return { kind: 'reject', error: noBackend(t, pool) }
  }

  /** Queue depth per pool and class (telemetry reads it at scrape time). */
  *queueDepths(): Iterable<QueueDepth> {
    for (const pa of this.pools.values()) {
      for (const d of pa.depths()) {
        const ttftMargin = pa.ttft.get(d.class)?.margin.value
        const tpotMargin = pa.tpotMargin(d.class)
        yield {
          class: d.class,
          pool: pa.pool.name,
          queued: d.queued,
          inflight: d.inflight,
          ...(ttftMargin === undefined ? {} : { ttftMargin }),
          ...(tpotMargin === undefined ? {} : { tpotMargin }),
        }
      }
    }
  }

  /** After a scrape or a membership change: let every pool dispatch what it can. */
  pumpAll(): void {
    for (const pa of this.pools.values()) {
      pa.syncFacts()
      warnUnreachableTpot(pa, this.tpotWarned, this.logger)
      warnServerWaits(pa, this.waitsWarned, this.logger)
      pa.schedulePump()
    }
  }

  state(): object {
    return {
      classes: this.config.classes,
      margin: this.config.admission.margin,
      charsPerToken: this.tokens?.state() ?? {},
      pools: [...this.pools.values()].map((pa) => pa.state()),
    }
  }

  close(): void {
    for (const pa of this.pools.values()) pa.close()
  }
}
