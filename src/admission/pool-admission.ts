/**
 * Admission for one pool: its class queues, its TTFT estimator and its dispatcher.
 *
 * The dispatcher releases the head of the queues (priority order above each class's floor,
 * fair between tenants) to the endpoint the picker chooses among those with headroom for
 * the head's class. It runs when something can have changed: a request arrives, a request
 * ends (its lease is released), a scrape lands, a deadline passes. Never a busy loop.
 * Its other parts, each in its file: predictions for requests not yet placed, early refusal
 * among them (pool-prediction.ts), the classes' TTFT objectives and margins
 * (ttft-objectives.ts), the endpoints' engine facts (pool-facts.ts), what an ended
 * request teaches (outcome-learning.ts), and prefix routing's choices at dispatch: holds
 * for a closed home and requests out of turn (cache-affinity.ts).
 */
import { priorsFrom } from '../backends/engine-facts.js'
import type { BackendPool, Endpoint, EndpointView, Lease } from '../backends/types.js'
import type { Clock, TimerClock } from '../clock.js'
import type { AdmissionConfig, ClassConfig } from '../config/schema.js'
import { GatewayError } from '../errors.js'
import { ArrivalRate } from './arrival-rate.js'
import { CacheAffinity } from './cache-affinity.js'
import { ClassQueues } from './class-queues.js'
import { DeadlineTimer } from './deadline-timer.js'
import { SHED_INTERVAL_MS } from './early-refusal.js'
import type { Admitted } from './face.js'
import { promiseBy } from './first-token-promise.js'
import { EndpointGates, type StepMark } from './gate.js'
import { learnFromFirstToken, learnFromOutcome } from './outcome-learning.js'
import { PoolFacts } from './pool-facts.js'
import { type PoolPrediction, PoolPredictor } from './pool-prediction.js'
import { PrefixAwareness } from './prefix-awareness.js'
import { RunningRequests } from './running.js'
import { TtftEstimator } from './ttft-estimator.js'
import { TtftObjectives } from './ttft-objectives.js'
import { keepsReserves, type ReserveCheck, type ServerAt, TtftReserve } from './ttft-reserve.js'
import { AdmittedLease, Waiting } from './waiting.js'

export type { PoolPrediction }
export { Waiting }

export class PoolAdmission {
  readonly pool: BackendPool
  readonly estimator: TtftEstimator
  /** The prompt tokens the servers must compute: the prompt minus their expected cached prefix. */
  readonly prefix: PrefixAwareness
  private readonly queues: ClassQueues<Waiting>
  private readonly classNames: readonly string[]
  /** Requests dispatched and not yet ended, per class. */
  private readonly inflight = new Map<string, number>()
  /** The same requests, per endpoint (when one is expected to end: Retry-After). */
  private readonly running = new RunningRequests()
  private readonly gates: EndpointGates
  /** The classes refused on their predicted TTFT: objectives, margins, budgets (ttft-objectives.ts). */
  readonly ttft: TtftObjectives
  private readonly lastAdmitted = new Map<string, number>()
  private readonly probeIntervalMs: number
  private readonly clock: Clock
  /** Its endpoints' engine facts: the estimator's priors, the least step (pool-facts.ts). */
  readonly facts: PoolFacts
  /** Its predictions for requests not yet placed: TTFT, Retry-After, reachability (pool-prediction.ts). */
  readonly predictor: PoolPredictor
  private readonly timer: DeadlineTimer
  private pumping = false
  private pumpScheduled = false
  private lastShedAt = Number.NEGATIVE_INFINITY
  private closed = false
  /** Until when the head of a queue is held for the endpoint caching its prompt (cache-hold.ts). */
  private holdUntil: number | undefined = undefined
  /** Prefix routing's choices at dispatch: holds for a closed home, requests out of turn (cache-affinity.ts). */
  private readonly affinity: CacheAffinity
  /** What the classes below keep free for an arrival of a class above (ttft-reserve.ts). */
  private readonly reserve: TtftReserve
  /** What the TTFT reserve's check reads of the pool (ttft-reserve.ts keepsReserves). */
  private readonly reserveCheck: ReserveCheck

  /** Who runs the dispatcher and the deadline timer later: real timers, unless a TimerClock is given (plan's virtual time). */
  private readonly timers: TimerClock | undefined
  /** Prompt tokens placed per class and ms (a queued request's company at dispatch). */
  private readonly arrivals: ArrivalRate

  constructor(
    pool: BackendPool,
    classes: Record<string, ClassConfig>,
    cfg: AdmissionConfig,
    clock: Clock,
    timers?: TimerClock,
  ) {
    this.pool = pool
    this.clock = clock
    this.timers = timers
    this.arrivals = new ArrivalRate(clock)
    this.facts = new PoolFacts(pool, classes, priorsFrom(cfg))
    this.timer = new DeadlineTimer(clock, () => this.onDeadline(), timers)
    this.estimator = new TtftEstimator(
      { stepMs: cfg.estimator.step_ms, prefillTokensPerS: cfg.estimator.prefill_tokens_per_s },
      clock,
    )
    this.prefix = new PrefixAwareness(cfg.estimator.prefix_cache, pool)
    const defs = Object.entries(classes).map(([name, c]) => ({
      name,
      priority: c.priority,
      queueLimit: c.queue_limit,
      queueLimitBytes: c.queue_limit_bytes,
      maxQueueWaitMs: c.max_queue_wait_ms,
      minShare: c.min_share,
    }))
    this.queues = new ClassQueues<Waiting>({
      classes: defs,
      clock,
      minShareWindowMs: cfg.min_share_window_ms,
    })
    this.probeIntervalMs = cfg.probe_interval_ms
    // the priors are trusted for one probe interval from the start
    for (const name of Object.keys(classes)) this.lastAdmitted.set(name, clock.now())
    this.gates = new EndpointGates(classes, cfg, clock, this.facts.priors.prefillTokensPerS)
    this.gates.onChange = () => this.schedulePump()
    this.gates.onStepBegin = () => this.schedulePump()
    // a class's prefill share binds while a class above it has work (in flight or queued)
    const above = classesBy(defs, (o, d) => o.priority < d.priority)
    this.gates.aboveBusy = (className) => {
      for (const c of above.get(className) ?? NO_CLASSES)
        if ((this.inflight.get(c) ?? 0) > 0 || this.queues.sizeOf(c) > 0) return true
      return false
    }
    const below = classesBy(defs, (o, d) => o.priority > d.priority)
    this.reserveCheck = {
      serverAt: (endpoint) => this.serverAt(endpoint),
      serverMs: (at, ahead, own) =>
        this.estimator.serverMs(this.estimator.features(ahead, own, at.stepMs, at.residualMs)),
      budget: (className) => this.ttft.budget(className, this.ttft.get(className)?.sloMs),
      belowRunning: (className) => {
        for (const c of below.get(className) ?? NO_CLASSES) if ((this.inflight.get(c) ?? 0) > 0) return true
        return false
      },
    }
    this.classNames = defs.map((d) => d.name)
    this.ttft = new TtftObjectives(classes, cfg)
    this.reserve = new TtftReserve(
      defs.map((d) => ({
        name: d.name,
        priority: d.priority,
        reserves: this.ttft.get(d.name) !== undefined,
      })),
      cfg.ttft_reserve_quantile,
      cfg.ttft_reserve_idle_ms,
    )
    this.gates.classActive = (className) => this.reserve.active(className, this.clock.now())
    this.predictor = new PoolPredictor({
      pool,
      gates: this.gates,
      queues: this.queues,
      prefix: this.prefix,
      estimator: this.estimator,
      running: this.running,
      ttft: this.ttft,
      clock,
      arrivals: this.arrivals,
    })
    this.affinity = new CacheAffinity({
      pool,
      prefix: this.prefix,
      queues: this.queues,
      gates: this.gates,
      predictor: this.predictor,
      estimator: this.estimator,
      clock,
      refuseRecompute: cfg.refuse_recompute,
      openFor: (w, floor) => this.openFor(w, floor),
      dispatch: (w, lease, waitedMs) => {
        this.afterDequeue()
        w.resolve(this.start(w, lease, waitedMs))
      },
    })
  }

  /**
   * True when this class has had nothing admitted for probe_interval_ms: the next request
   * goes in against a refusing prediction, so the estimator keeps learning from outcomes
   * (refusals teach it nothing, and a wrong fit would otherwise refuse forever).
   */
  probeDue(className: string): boolean {
    const last = this.lastAdmitted.get(className)
    return last !== undefined && this.clock.now() - last >= this.probeIntervalMs
  }

  /**
   * Places an admitted request: dispatched at once (its lease) when nothing of its class or
   * above waits and an endpoint has headroom, else queued until `deadline` (the request
   * itself, whose lease comes later), or refused when its class's queue is full. `order`:
   * its rank in its tenant's queue (its TTFT deadline; undefined: at the tail).
   */
  place(w: Waiting, tenant: string, weight: number, deadline: number, order?: number): Admitted {
    this.lastAdmitted.set(w.className, this.clock.now())
    // the work it brings the servers: its prompt less the prefix expected in their caches
    const work = w.computeTokens ?? w.promptTokens
    this.arrivals.arrived(w.className, work)
    w.dispatchBy = deadline
    if (this.ttft.get(w.className) !== undefined)
      w.promiseBy = promiseBy(this.clock.now(), w.prediction.totalMs)
    if (this.queues.costAhead(w.className) === 0 && this.queues.sizeOf(w.className) === 0) {
      const open = this.openFor(w, false)
      const { holdMs, refuseMs } = this.affinity.weigh(w, open)
      if (refuseMs !== undefined) return this.recomputeRefusal(w, refuseMs, 0)
      const lease = holdMs > 0 ? undefined : this.pool.acquire(w.kvTokens, open, this.prefix.hint(w))
      if (lease !== undefined) {
        this.queues.recordDispatch(w.className, work) // into the floors of the classes waiting
        return this.start(w, lease, 0)
      }
      if (holdMs > 0) this.hold(holdMs)
    }
    const r = this.queues.enqueue(w, {
      class: w.className,
      tenant,
      cost: work,
      bytes: w.ticket.bodyBytes,
      weight,
      deadline,
      ...(order === undefined ? {} : { order }),
    })
    if (r === 'queue_full') {
      return new GatewayError(
        'GW_ERR_QUEUE_FULL',
        { class: w.className },
        { retryAfterMs: this.predictor.retryAfterMs(w.className, w.promptTokens, w.kvTokens) },
      )
    }
    w.owner = this
    w.queuedAt = this.clock.now()
    this.estimator.onBacklog(true)
    this.armTimer()
    // queued ahead of what waits (an earlier TTFT deadline): the gates may be open to it
    if (this.queues.sizeOf(w.className) > 1 && this.queues.peekClass(w.className)?.item === w)
      this.schedulePump()
    return w
  }

  /** The client went away while queued. True when it was still queued. */
  cancel(w: Waiting): boolean {
    const removed = this.queues.remove(w)
    if (removed) this.afterDequeue()
    return removed
  }

  /** A gap between two tokens of a stream from `endpoint` (the decode guard's input, and its step time's). */
  observeGap(endpoint: Endpoint, stream: StepMark, gapMs: number, now: number): void {
    const window = this.gates.observeGap(endpoint.name, stream, gapMs, now)
    if (window !== undefined) endpoint.facts?.observeStepWindow(window.meanMs, window.gaps, window.streams)
  }

  private start(w: Waiting, lease: Lease, queuedMs: number): AdmittedLease {
    this.inflight.set(w.className, (this.inflight.get(w.className) ?? 0) + 1)
    this.running.add(lease.endpoint.name, w)
    w.ticket.queuedMs = queuedMs
    const endpoint = lease.endpoint.name
    const at = this.serverAt(endpoint)
    // the endpoint is known now: its own expected hit (and the prompt is remembered there)
    const cached =
      w.blocks === undefined ? 0 : this.prefix.dispatched(lease.endpoint, w.blocks, w.promptTokens)
    const compute = w.promptTokens - cached
    w.computeTokens = compute
    w.facts = lease.endpoint.facts
    const queuedOnArrival = w.prediction.queueFeatures !== undefined
    w.pendingTokens = at.pendingTokens
    // the prompts expected to be sent after it and share its step count as prefill it meets
    w.expectedJoined = this.estimator.expectedJoined(queuedOnArrival)
    w.serverFeatures = this.estimator.features(
      w.pendingTokens + w.expectedJoined,
      compute,
      at.stepMs,
      at.residualMs,
    )
    this.estimator.onDispatch(w.promptTokens)
    const expectedMs = this.estimator.serverMs(w.serverFeatures)
    // the prefill ledger counts the work the server must do: the tokens it computes
    const uncount = this.gates.dispatched(endpoint, compute, expectedMs, w, w.promiseBy, w.className)
    return new AdmittedLease(lease, w, this, uncount)
  }

  /** A stream's TPOT, in all or so far, for its class's TPOT margin (DecodeGuard.judgeTpot). */
  judgeTpot(className: string, tpotMs: number, final: boolean): boolean {
    return this.gates.judgeTpot(className, tpotMs, final)
  }

  /** The decode guard's TPOT margin of `className` in this pool (undefined without a TPOT objective). */
  tpotMargin(className: string): number | undefined {
    return this.gates.tpotMargin(className)
  }

  /**
   * A dispatched request ended: it leaves the in-flight count; the estimator learns its
   * prompt size and, when it streamed, its server TTFT; the dispatcher runs.
   */
  finished(w: Waiting, endpoint: string): void {
    this.inflight.set(w.className, (this.inflight.get(w.className) ?? 1) - 1)
    this.running.delete(endpoint, w)
    if (w.ticket.firstTokenAt !== undefined)
      this.gates.decoderLeft(endpoint, w.promptTokens + w.ticket.contentChunks)
    learnFromOutcome(w, this.predictor, this.gates)
    this.syncFacts()
    this.schedulePump()
  }

  /** The estimator's and the step models' priors from the endpoints' engine facts (pool-facts.ts). */
  syncFacts(): void {
    this.facts.sync(this.estimator, this.gates)
  }

  /** A dispatched request's prompt was prefilled (its first token, or its end without one). */
  prefilled(w: Waiting, endpoint: string): void {
    const now = this.clock.now()
    if (w.ticket.firstTokenAt !== undefined) {
      this.gates.tokenFrom(endpoint, w, now)
      this.gates.firstToken(endpoint, now, w.promptTokens)
    }
    const began = this.gates.stepBegan(endpoint, now)
    const joined = began === undefined ? 0 : w.joinedBy(began)
    learnFromFirstToken(w, this.estimator, this.ttft, joined)
    this.schedulePump()
  }

  /** Something changed (a request ended, a scrape landed): dispatch what can go. */
  schedulePump(): void {
    if (this.pumpScheduled || this.closed || this.queues.size === 0) return
    this.pumpScheduled = true
    const run = () => {
      this.pumpScheduled = false
      this.pump()
    }
    if (this.timers !== undefined) this.timers.schedule(0, run)
    else setImmediate(run)
  }

  pump(): void {
    if (this.pumping || this.closed) return
    this.pumping = true
    this.holdUntil = undefined
    try {
      let progressed = true
      while (progressed && this.queues.size > 0) {
        progressed = false
        for (const name of this.queues.classesInOrder()) {
          const head = this.queues.peekClass(name)?.item
          if (head === undefined) continue
          // A class served under its floor skips the decode guard (nothing waits forever on a
          // guard the classes above keep closed), not the other gates.
          const floor = this.queues.underFloor(name)
          const open = this.openFor(head, floor)
          const { closed, holdMs, refuseMs } = this.affinity.weigh(head, open)
          if (refuseMs !== undefined) {
            this.queues.dequeueFrom(name)
            this.afterDequeue()
            const now = this.clock.now()
            this.refuseQueued(head, this.recomputeRefusal(head, refuseMs, now - head.queuedAt), now)
            progressed = true
            break
          }
          // its home closed: a request behind it whose own home is open goes there first
          if (
            closed !== undefined &&
            this.affinity.dispatchFollower(name, floor, head, holdMs > 0, closed.views)
          ) {
            progressed = true
            break
          }
          if (holdMs > 0) this.hold(holdMs)
          const lease =
            holdMs > 0 ? undefined : this.pool.acquire(head.kvTokens, open, this.prefix.hint(head))
          // Strict priority: when the first class with work cannot go, nothing below it goes;
          // a class due under its floor holds the line the same way until it fits (its share
          // is a guarantee, and a large prompt would otherwise never find the prefill budget
          // free while the classes above keep it busy).
          if (lease === undefined) break
          const out = this.queues.dequeueFrom(name)
          this.afterDequeue()
          head.resolve(this.start(head, lease, out?.waitedMs ?? 0))
          progressed = true
          break
        }
      }
      this.shedHopeless()
    } finally {
      this.pumping = false
    }
    this.armTimer()
  }

  /**
   * Early refusal (early-refusal.ts) of the queued requests predicted to miss now (at most
   * every SHED_INTERVAL_MS): after a dispatch cycle, and before an arrival is predicted
   * (the requests ahead of it that will be refused do not hold it).
   */
  shedHopeless(): void {
    if (this.queues.size === 0 || this.ttft.size === 0) return
    const now = this.clock.now()
    if (now - this.lastShedAt < SHED_INTERVAL_MS) return
    this.lastShedAt = now
    const refuse = (w: Waiting, error: GatewayError) => {
      this.ttft.refusedFromQueue(w.className)
      this.refuseQueued(w, error, now)
    }
    if (this.predictor.refuseHopeless(now, refuse) > 0) this.afterDequeue()
  }

  private afterDequeue(): void {
    if (this.queues.size === 0) this.estimator.onBacklog(false)
    this.armTimer()
  }

  private armTimer(): void {
    const deadline = this.queues.nextDeadline()
    const hold = this.holdUntil
    this.timer.arm(hold === undefined || (deadline !== undefined && deadline < hold) ? deadline : hold)
  }

  /**
   * A request of `className` arrived needing `computeTokens` of prefill at the endpoint
   * caching most of it: the TTFT reserve of its class learns its size.
   */
  arrived(className: string, computeTokens: number): void {
    this.reserve.arrived(className, computeTokens, this.clock.now())
  }

  /**
   * The gates for `w` (of its class; `floor`: its class is served under its floor): the
   * endpoints' (gate.ts) and the TTFT reserve of the classes above (ttft-reserve.ts).
   */
  private openFor(w: Waiting, floor: boolean): (v: EndpointView) => boolean {
    const computeAt = this.prefix.computeAt(w.blocks, w.promptTokens)
    const keepPromises = w.prediction.overPromises !== true
    const gate = this.gates.open(w.className, w.kvTokens, w.promptTokens, {
      pastGuard: floor,
      computeAt,
      keepPromises,
    })
    if (floor) return gate
    const reserves = this.reserve.of(w.className, this.clock.now())
    if (reserves.length === 0) return gate
    return (v) => gate(v) && keepsReserves(v, reserves, computeAt?.(v) ?? w.promptTokens, this.reserveCheck)
  }

  /**
   * What a prompt sent to `endpoint` now meets there: its live step time, the time left in
   * the step in progress, and the prompt tokens pending beyond those that step took.
   */
  private serverAt(endpoint: string): ServerAt {
    const phase = this.gates.phase(endpoint)
    return {
      stepMs: this.gates.decodeStepMs(endpoint),
      residualMs: phase.residualMs,
      pendingTokens: this.gates.pendingAt(endpoint) - phase.inStepTokens,
    }
  }

  /** Holds the head of the queues for `ms` (the dispatcher runs again then, or when a gate opens). */
  private hold(ms: number): void {
    this.holdUntil = this.clock.now() + ms
  }

  private onDeadline(): void {
    const now = this.clock.now()
    const expired = this.queues.expired(now)
    if (expired.length > 0) this.afterDequeue()
    for (const w of expired) {
      this.refuseQueued(
        w,
        new GatewayError(
          'GW_ERR_QUEUE_TIMEOUT',
          { class: w.className },
          { retryAfterMs: this.predictor.retryAfterMs(w.className, w.promptTokens, w.kvTokens) },
        ),
        now,
      )
    }
    this.pump()
  }

  /**
   * The refusal of a request whose home reopens in `reopenMs`, past capacity, rather than
   * recomputed elsewhere (cache-hold.ts): predicted TTFT = queued so far + the home's reopen
   * + its prefill there; Retry-After: the reopen.
   */
  private recomputeRefusal(w: Waiting, reopenMs: number, queuedMs: number): GatewayError {
    const prefillMs = (w.computeTokens ?? w.promptTokens) * this.estimator.msPerPromptToken()
    return new GatewayError(
      'GW_ERR_TTFT_SLO',
      { class: w.className, predicted: Math.round(queuedMs + reopenMs + prefillMs) },
      { retryAfterMs: Math.max(1, Math.ceil(reopenMs)) },
    )
  }

  /** Refuses a request taken out of the queue; its wait goes out in `x-gateway-queue-ms`. */
  private refuseQueued(w: Waiting, error: GatewayError, now: number): void {
    w.ticket.queuedMs = Math.max(0, now - w.queuedAt)
    w.resolve(error)
  }

  /** Queue sizes per class, for metrics and /admin/state. */
  depths(): { class: string; queued: number; inflight: number }[] {
    return this.classNames.map((c) => ({
      class: c,
      queued: this.queues.sizeOf(c),
      inflight: this.inflight.get(c) ?? 0,
    }))
  }

  state(): object {
    return {
      pool: this.pool.name,
      unreachableObjectives: this.predictor.unreachableObjectives(),
      unreachableTpot: this.facts.unreachableTpot(),
      classes: Object.fromEntries(
        this.depths().map((d) => [
          d.class,
          {
            queued: d.queued,
            inflight: d.inflight,
            oldestWaitMs: Math.round(this.queues.oldestWaitMs(d.class, this.clock.now())),
          },
        ]),
      ),
      meanPromptTokens: Math.round(this.predictor.meanPrompt),
      floorOwedTokens: this.queues.floorState(),
      ttftReserveTokens: this.reserve.state(),
      ttftMargin: this.ttft.margins(),
      ...this.gates.state(this.pool.views()),
      engineFacts: Object.fromEntries(this.pool.endpoints().map((e) => [e.name, e.facts?.state() ?? null])),
      estimator: this.estimator.state(),
      prefixCache: this.prefix.state(),
      outOfTurn: this.affinity.outOfTurn,
      refusedRecompute: this.affinity.refusedRecompute,
    }
  }

  close(): void {
    this.closed = true
    this.timer.clear()
    const now = this.clock.now()
    for (const w of this.queues.expired(Number.POSITIVE_INFINITY)) {
      this.refuseQueued(w, new GatewayError('GW_ERR_DRAINING', {}, { retryAfterMs: 1000 }), now)
    }
  }
}

const NO_CLASSES: readonly string[] = []

/** For each class of `defs`, the names of the classes `o` with `rel(o, it)`. */
function classesBy<D extends { readonly name: string }>(
  defs: readonly D[],
  rel: (o: D, d: D) => boolean,
): Map<string, readonly string[]> {
  return new Map(defs.map((d) => [d.name, defs.filter((o) => rel(o, d)).map((o) => o.name)]))
}
