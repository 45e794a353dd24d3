/**
 * Admission for one pool: its class queues, its TTFT estimator and its dispatcher.
 *
 * The dispatcher releases the head of the queues (priority order above each class's floor,
 * fair between tenants) to the endpoint the picker chooses among those with headroom for
 * the head's class. It runs when something can have changed: a request arrives, a request
 * ends (its lease is released), a scrape lands, a deadline passes. Never a busy loop.
 */
import { type Fact, priorsFrom } from '../backends/engine-facts.js'
import type { PromptBlocks } from '../backends/prefix-index.js'
import type { BackendPool, Endpoint, Lease } from '../backends/types.js'
import type { Clock, TimerClock } from '../clock.js'
import type { AdmissionConfig, ClassConfig } from '../config/schema.js'
import { GatewayError } from '../errors.js'
import { ClassQueues } from './class-queues.js'
import { DeadlineTimer } from './deadline-timer.js'
import { SHED_INTERVAL_MS, shedHopeless } from './early-refusal.js'
import type { Admitted } from './face.js'
import { EndpointGates, type GateLimits, kvFits } from './gate.js'
import { TtftMargin } from './margin.js'
import { PrefixAwareness } from './prefix-awareness.js'
import { RunningRequests } from './running.js'
import { type UnreachableTpot, unreachableTpot } from './tpot-reachable.js'
import { type Prediction, TtftEstimator } from './ttft-estimator.js'
import { AdmittedLease, Waiting } from './waiting.js'

export { Waiting }

const PROMPT_ALPHA = 0.05
/** The whole KV cache (a need beyond its free part means a preemption before the request ends). */
const WHOLE_CACHE: GateLimits = { maxKvUsage: 1, maxWaiting: 0, maxInflight: 0 }

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
}

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
  /** Classes whose queue wait the estimator learns from: those admitted on its prediction. */
  private readonly learnFrom = new Set<string>()
  /** Per class refused on its predicted TTFT: its objective and its margin. */
  private readonly ttft = new Map<string, { sloMs: number; margin: TtftMargin }>()
  private readonly lastAdmitted = new Map<string, number>()
  private readonly probeIntervalMs: number
  private readonly clock: Clock
  private readonly classes: Record<string, ClassConfig>
  /** The priors (config or default): an endpoint without facts (a stand-in) has these. */
  private readonly priors: { stepMs: Fact; prefillTokensPerS: Fact }
  private meanPrompt = 512
  private readonly timer: DeadlineTimer
  private pumping = false
  private pumpScheduled = false
  private lastShedAt = Number.NEGATIVE_INFINITY
  private closed = false

  /** Who runs the dispatcher and the deadline timer later: real timers, unless a TimerClock is given (plan's virtual time). */
  private readonly timers: TimerClock | undefined

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
    this.classes = classes
    this.priors = priorsFrom(cfg)
    this.timer = new DeadlineTimer(clock, () => this.onDeadline(), timers)
    this.estimator = new TtftEstimator(
      { stepMs: cfg.estimator.step_ms, prefillTokensPerS: cfg.estimator.prefill_tokens_per_s },
      clock,
    )
    this.prefix = new PrefixAwareness(cfg.estimator.prefix_cache)
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
    this.gates = new EndpointGates(classes, cfg, clock, this.priors.prefillTokensPerS)
    this.gates.onChange = () => this.schedulePump()
    this.classNames = defs.map((d) => d.name)
    for (const [name, c] of Object.entries(classes)) {
      if (!c.reject_on_ttft) continue
      this.learnFrom.add(name)
      if (c.slo.ttft_ms !== undefined)
        this.ttft.set(name, {
          sloMs: c.slo.ttft_ms,
          margin: new TtftMargin(cfg.margin, cfg.ttft_miss_target),
        })
    }
  }

  /**
   * Predicted TTFT for a new request of this class, were it placed now: dispatched at once
   * when nothing of its class or above is queued and an endpoint is open to it, else after
   * the prompts queued ahead of it. `kvBlocked`: no endpoint has KV room for this request
   * under its class's limit now (a refusal then says kv_exhausted rather than ttft_slo).
   * `blocks`: its prompt's blocks (prefix awareness): the server part prices only the
   * tokens not expected in the prefix cache of the endpoints it may go to (see
   * prefix-awareness.ts); `leastComputeTokens` is what the endpoint holding the most of it
   * would compute.
   */
  predict(className: string, promptTokens: number, kvTokens: number, blocks?: PromptBlocks): PoolPrediction {
    const views = this.pool.views()
    const view = this.gates.serverView(views, this.meanPrompt)
    const computeAt = this.prefix.computeAt(blocks, promptTokens)
    const open = this.gates.open(className, kvTokens, promptTokens, false, computeAt)
    const blocked = !views.some(open)
    const kvBlocked =
      blocked && views.length > 0 && !views.some((v) => this.gates.kvFits(className, v, kvTokens))
    const ahead = this.queues.costAhead(className)
    const queued = ahead > 0 || blocked ? ahead : undefined
    const roomMs = queued === undefined ? 0 : this.gates.roomInMs(views, promptTokens, computeAt)
    const hit =
      blocks === undefined
        ? undefined
        : this.prefix.expected(views, blocks, promptTokens, queued === undefined ? open : undefined)
    const compute = promptTokens - (hit?.expected ?? 0)
    const prediction = this.estimator.predict(view, queued, promptTokens, roomMs, compute)
    return {
      prediction,
      usable: views.length,
      kvBlocked,
      kvOvercommit: views.length > 0 && !views.some((v) => kvFits(v, WHOLE_CACHE, kvTokens)),
      stepMs: view.stepMs ?? this.estimator.stepMs,
      leastComputeTokens: promptTokens - (hit?.best ?? 0),
    }
  }

  /**
   * The predicted TTFT a request of this class is admitted up to here: its own TTFT
   * objective `sloMs` (its class's or its tenant's) × (1 − the class's margin); ∞ for a
   * class not refused on its predicted TTFT, or a request without a TTFT objective.
   */
  ttftBudget(className: string, sloMs: number | undefined): number {
    const t = this.ttft.get(className)
    return t === undefined || sloMs === undefined ? Number.POSITIVE_INFINITY : sloMs * (1 - t.margin.value)
  }

  /** The class's TTFT margin here; undefined for a class not refused on its predicted TTFT. */
  ttftMargin(className: string): number | undefined {
    return this.ttft.get(className)?.margin.value
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
   * The least TTFT a request of `promptTokens` can have here (an idle endpoint), when that
   * is above its TTFT objective `sloMs` (default: its class's): waiting cannot help it.
   * Undefined when it can be met, and for a class not refused on its predicted TTFT.
   */
  unreachableMs(className: string, promptTokens: number, sloMs?: number): number | undefined {
    const c = this.ttft.get(className)
    const slo = sloMs ?? c?.sloMs
    if (c === undefined || slo === undefined) return undefined
    const idle = this.estimator.idleServerMs(promptTokens)
    return idle > slo ? idle : undefined
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
   * itself, whose lease comes later), or refused when its class's queue is full.
   */
  place(w: Waiting, tenant: string, weight: number, deadline: number): Admitted {
    this.lastAdmitted.set(w.className, this.clock.now())
    if (this.queues.costAhead(w.className) === 0 && this.queues.sizeOf(w.className) === 0) {
      const computeAt = this.prefix.computeAt(w.blocks, w.promptTokens)
      const open = this.gates.open(w.className, w.kvTokens, w.promptTokens, false, computeAt)
      const lease = this.pool.acquire(w.kvTokens, open)
      if (lease !== undefined) {
        this.queues.recordDispatch(w.className, w.promptTokens) // into the floors of the classes waiting
        return this.start(w, lease, 0)
      }
    }
    const r = this.queues.enqueue(w, {
      class: w.className,
      tenant,
      cost: w.promptTokens,
      bytes: w.ticket.bodyBytes,
      weight,
      deadline,
    })
    if (r === 'queue_full') {
      return new GatewayError(
        'GW_ERR_QUEUE_FULL',
        { class: w.className },
        { retryAfterMs: this.retryAfterMs(w.className, w.promptTokens, w.kvTokens) },
      )
    }
    w.owner = this
    this.estimator.onBacklog(true)
    this.armTimer()
    return w
  }

  /** The client went away while queued. True when it was still queued. */
  cancel(w: Waiting): boolean {
    const removed = this.queues.remove(w)
    if (removed) this.afterDequeue()
    return removed
  }

  /** A gap between two tokens of a stream from `endpoint` (the decode guard's input, and its step time's). */
  observeGap(endpoint: Endpoint, gapMs: number, now: number): void {
    const window = this.gates.observeGap(endpoint.name, gapMs, now)
    if (window !== undefined) endpoint.facts?.observeStepWindow(window)
  }

  private start(w: Waiting, lease: Lease, queuedMs: number): AdmittedLease {
    this.inflight.set(w.className, (this.inflight.get(w.className) ?? 0) + 1)
    this.running.add(lease.endpoint.name, w)
    w.ticket.queuedMs = queuedMs
    const endpoint = lease.endpoint.name
    // A batch request's wait is for backfill, which the model does not (and need not)
    // predict: learning from it would inflate every prediction.
    const learn = this.learnFrom.has(w.className)
    if (learn) this.estimator.observeQueue(w.prediction, queuedMs)
    const pending = this.gates.pendingAt(endpoint)
    // the endpoint is known now: its own expected hit (and the prompt is remembered there)
    const cached =
      w.blocks === undefined ? 0 : this.prefix.dispatched(lease.endpoint, w.blocks, w.promptTokens)
    const compute = w.promptTokens - cached
    w.computeTokens = compute
    w.facts = lease.endpoint.facts
    w.serverFeatures = this.estimator.features(pending, compute, this.gates.itl(endpoint))
    this.estimator.onDispatch(w.promptTokens, pending, learn && w.prediction.queueFeatures !== undefined)
    const expectedMs = this.estimator.serverMs(w.serverFeatures)
    // the prefill ledger counts the work the server must do: the tokens it computes
    const uncount = this.gates.dispatched(endpoint, compute, expectedMs, w)
    return new AdmittedLease(lease, w, this, uncount)
  }

  /**
   * A dispatched request ended: it leaves the in-flight count; the estimator learns its
   * prompt size and, when it streamed, its server TTFT; the dispatcher runs.
   */
  finished(w: Waiting, endpoint: string): void {
    this.inflight.set(w.className, (this.inflight.get(w.className) ?? 1) - 1)
    this.running.delete(endpoint, w)
    this.learn(w)
    this.syncFacts()
    this.schedulePump()
  }

  /**
   * The estimator's priors from the endpoints' engine facts (their mean), once they are
   * learned (engine-facts.ts); after a request ends and after scrapes.
   */
  syncFacts(): void {
    const eps = this.pool.endpoints()
    let step = 0
    let rate = 0
    let n = 0
    for (const e of eps) {
      if (e.facts === undefined) continue
      step += e.facts.stepMs().value
      rate += e.facts.prefillTokensPerS().value
      n++
    }
    if (n > 0) this.estimator.adoptPriors({ stepMs: step / n, prefillTokensPerS: rate / n })
  }

  /** The engine's least step: the fastest endpoint's step fact (the prior without facts). */
  private leastStep(): Fact {
    let best: Fact | undefined
    for (const e of this.pool.endpoints()) {
      const s = e.facts?.stepMs()
      if (s !== undefined && (best === undefined || s.value < best.value)) best = s
    }
    return best ?? this.priors.stepMs
  }

  /** Classes whose TPOT objective no batch size holds on this pool's engines (tpot-reachable.ts). */
  unreachableTpot(): UnreachableTpot[] {
    return unreachableTpot(this.classes, this.leastStep())
  }

  private learn(w: Waiting): void {
    const t = w.ticket
    // the mean prefill work of a request (what one waiting at a server costs): its prompt,
    // less the share expected in the prefix cache
    const share = w.computeTokens === undefined || w.promptTokens <= 0 ? 1 : w.computeTokens / w.promptTokens
    const prompt = (t.usage?.promptTokens ?? w.promptTokens) * share
    this.meanPrompt += PROMPT_ALPHA * (prompt - this.meanPrompt)
    // Every class teaches the server part (the engine does not know classes), so it keeps
    // learning while a class is refused; only the queue part is per-class (see start()).
    if (t.firstTokenAt !== undefined && t.dispatchedAt !== undefined && w.serverFeatures !== undefined) {
      this.estimator.observeServer(w.serverFeatures, t.firstTokenAt - t.dispatchedAt)
      // the prompt tokens its prefill met there (pending, its own to compute as the server
      // counted them, those sent after it that may have shared its step): the prefill rate
      const pending = (w.serverFeatures[1] ?? 0) - (w.computeTokens ?? 0)
      w.facts?.observePrefill(pending + prompt + w.joinedTokens, t.firstTokenAt - t.dispatchedAt)
      const ttftMs = t.firstTokenAt - t.arrivedAt
      if (this.learnFrom.has(w.className)) this.estimator.judge(w.prediction, ttftMs)
      // the margin learns from requests admitted on their prediction (not from probes),
      // each judged by its own objective (its tenant's, where it overrides the class's)
      const c = this.ttft.get(w.className)
      const sloMs = t.slo?.ttft_ms ?? c?.sloMs
      if (c !== undefined && sloMs !== undefined && w.prediction.totalMs <= sloMs)
        c.margin.observe(ttftMs > sloMs)
    }
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
          const lease = this.pool.acquire(
            head.kvTokens,
            this.gates.open(
              name,
              head.kvTokens,
              head.promptTokens,
              floor,
              this.prefix.computeAt(head.blocks, head.promptTokens),
            ),
          )
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

  /** Early refusal (early-refusal.ts) of the queued requests predicted to miss now. */
  private shedHopeless(): void {
    if (this.queues.size === 0 || this.ttft.size === 0) return
    const now = this.clock.now()
    if (now - this.lastShedAt < SHED_INTERVAL_MS) return
    this.lastShedAt = now
    const view = this.gates.serverView(this.pool.views(), this.meanPrompt)
    const queueWaitMs = (ahead: number, own: number) => this.estimator.predict(view, ahead, own).queueMs
    let shed = false
    for (const [name, c] of this.ttft) {
      if (this.queues.sizeOf(name) === 0) continue
      for (const { item: w, predictedMs } of shedHopeless(this.queues, name, c.sloMs, now, queueWaitMs)) {
        shed = true
        w.resolve(
          new GatewayError(
            'GW_ERR_TTFT_SLO',
            { class: name, predicted: Math.round(predictedMs) },
            { retryAfterMs: this.retryAfterMs(name, w.promptTokens, w.kvTokens) },
          ),
        )
      }
    }
    if (shed) this.afterDequeue()
  }

  private afterDequeue(): void {
    if (this.queues.size === 0) this.estimator.onBacklog(false)
    this.armTimer()
  }

  private armTimer(): void {
    this.timer.arm(this.queues.nextDeadline())
  }

  private onDeadline(): void {
    const expired = this.queues.expired(this.clock.now())
    if (expired.length > 0) this.afterDequeue()
    for (const w of expired) {
      w.resolve(
        new GatewayError(
          'GW_ERR_QUEUE_TIMEOUT',
          { class: w.className },
          { retryAfterMs: this.retryAfterMs(w.className, w.promptTokens, w.kvTokens) },
        ),
      )
    }
    this.pump()
  }

  /** Queue sizes per class, for metrics and /admin/state. */
  depths(): { class: string; queued: number; inflight: number }[] {
    return this.classNames.map((c) => ({
      class: c,
      queued: this.queues.sizeOf(c),
      inflight: this.inflight.get(c) ?? 0,
    }))
  }

  /**
   * Classes whose TTFT objective no request can meet here: even a one-token prompt on an
   * idle endpoint is predicted slower (by the estimator's current fit).
   */
  unreachableObjectives(): { class: string; sloMs: number; idleTtftMs: number }[] {
    const out: { class: string; sloMs: number; idleTtftMs: number }[] = []
    for (const [name, c] of this.ttft) {
      const idle = this.unreachableMs(name, 1)
      if (idle !== undefined) out.push({ class: name, sloMs: c.sloMs, idleTtftMs: Math.round(idle) })
    }
    return out
  }

  state(): object {
    return {
      pool: this.pool.name,
      unreachableObjectives: this.unreachableObjectives(),
      unreachableTpot: this.unreachableTpot(),
      classes: Object.fromEntries(
        this.depths().map((d) => [d.class, { queued: d.queued, inflight: d.inflight }]),
      ),
      meanPromptTokens: Math.round(this.meanPrompt),
      floorOwedTokens: this.queues.floorState(),
      ttftMargin: Object.fromEntries(
        [...this.ttft].map(([k, v]) => [k, Math.round(v.margin.value * 1000) / 1000]),
      ),
      ...this.gates.state(this.pool.views()),
      engineFacts: Object.fromEntries(this.pool.endpoints().map((e) => [e.name, e.facts?.state() ?? null])),
      estimator: this.estimator.state(),
      prefixCache: this.prefix.state(),
    }
  }

  close(): void {
    this.closed = true
    this.timer.clear()
    for (const w of this.queues.expired(Number.POSITIVE_INFINITY)) {
      w.resolve(new GatewayError('GW_ERR_DRAINING', {}, { retryAfterMs: 1000 }))
    }
  }
}
