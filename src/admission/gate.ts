/**
 * Dispatch gates: may an endpoint take one more request of a class now? And what do the
 * servers of a pool look like to the estimator?
 */
import type { EngineFactsView, Fact } from '../backends/engine-facts.js'
import type { EndpointView } from '../backends/types.js'
import type { Clock } from '../clock.js'
import {
  type AdmissionConfig,
  type ClassConfig,
  configured,
  DEFAULT_PREFILL_BUDGET,
} from '../config/schema.js'
import { DecodeGuard, type ItlWindow, type NextStep } from './decode-guard.js'
import type { EndpointNow } from './dispatch-forecast.js'
import { breaksPromise } from './first-token-promise.js'
import { freeSlots, type GateLimits, hasHeadroom, kvFits, kvFreeTokens } from './headroom.js'
import { type BudgetFacts, type PrefillBudget, prefillBudget } from './prefill-budget.js'
import { fitsBudget, type JoinedSink, PrefillLedger } from './prefill-ledger.js'
import type { RunningEnd } from './running.js'
import { EngineTimeline, type Phase, type StepMark, type StepPriors } from './step-timeline.js'
import type { ServerView } from './ttft-estimator.js'

/** Of a request's prompt, the tokens a given endpoint must compute (its cached prefix excluded). */
export type ComputeAt = (v: EndpointView) => number

/** How a request meets the gates (EndpointGates.open). */
export interface GateOptions {
  /**
   * It is served under its class's floor (min_share): it skips the decode guard, the
   * first-token promises and its class's share of the prefill budget (it may use all of
   * it), so the classes above cannot hold it forever.
   */
  readonly pastGuard?: boolean
  /** Its tokens to compute at each endpoint (default: the whole prompt). */
  readonly computeAt?: ComputeAt | undefined
  /** False: the first-token promises do not hold it (it would miss its own objective). */
  readonly keepPromises?: boolean
}

const GATE_DEFAULTS: GateOptions = {}

/** The endpoint's least step, ms, when measured (the decode guard lets go of limits under it). */
const leastStepOf = (v: EndpointView): number | undefined => v.facts?.leastStepMs()?.value

export type { Phase, StepMark }

/**
 * The gates of one pool's endpoints, per class: headroom (queue, batch slots, KV under the
 * class's limit), the prefill budget (the gateway keeps at most the endpoint's budget of
 * prompt tokens to compute awaiting their first token at one endpoint, always one request,
 * so the queue forms in the gateway, in priority order, and not in the server's FCFS queue;
 * prefill-budget.ts) and the decode guard. The budget counts what the server must compute:
 * a prompt's prefix expected in the endpoint's cache is not prefill work (`computeAt`).
 */
export class EndpointGates {
  private readonly limits = new Map<string, GateLimits>()
  /** Each class's priority (lower runs first): whose first-token promises a prompt of it keeps. */
  private readonly priorities = new Map<string, number>()
  private readonly prefilling = new PrefillLedger()
  private readonly guard: DecodeGuard
  /** admission.max_prefill_tokens_per_endpoint, when the operator set it. */
  private readonly budgetOverride: number | undefined
  /** The tightest TTFT objective of the classes refused on it (the budget's time bound). */
  private readonly tightestTtftMs: number | undefined
  /** The facts of an endpoint that has none (a stand-in): the priors. */
  private readonly standIn: BudgetFacts
  private readonly clock: Clock
  /** Each endpoint's engine, step by step (step-timeline.ts). */
  private readonly timelines = new Map<string, EngineTimeline>()
  /** The step model's priors for an endpoint first seen. */
  private readonly stepPriors: StepPriors

  constructor(classes: Record<string, ClassConfig>, cfg: AdmissionConfig, clock: Clock, priors: Fact) {
    this.clock = clock
    this.stepPriors = { stepMs: cfg.estimator.step_ms, prefillTokensPerS: priors.value }
    this.budgetOverride = configured(cfg, 'max_prefill_tokens_per_endpoint')
      ? cfg.max_prefill_tokens_per_endpoint
      : undefined
    const ttfts = Object.values(classes).flatMap((c) =>
      c.reject_on_ttft && c.slo.ttft_ms !== undefined ? [c.slo.ttft_ms] : [],
    )
    this.tightestTtftMs = ttfts.length === 0 ? undefined : Math.min(...ttfts)
    this.standIn = {
      stepTokens: () => ({ value: DEFAULT_PREFILL_BUDGET, source: 'default_prior' }),
      prefillTokensPerS: () => priors,
    }
    this.guard = new DecodeGuard(
      Object.entries(classes).map(([name, c]) => ({ name, priority: c.priority, tpotMs: c.slo.tpot_ms })),
      cfg.margin,
      cfg.itl_window_ms,
      clock,
      cfg.tpot_miss_target,
      cfg.decode_headroom_below,
    )
    this.guard.unread = (endpoint, now) => this.timelines.get(endpoint)?.unreadGaps(now)
    for (const [name, c] of Object.entries(classes)) {
      this.priorities.set(name, c.priority)
      this.limits.set(name, {
        maxKvUsage: c.max_kv_usage,
        maxWaiting: cfg.max_server_waiting,
        maxInflight: cfg.max_inflight_per_endpoint,
        prefillShare: c.max_prefill_share,
      })
    }
  }

  /**
   * True while a class above `className` has requests in flight or queued in the pool: only
   * then does the class's prefill share bind (with nothing above it to wait, it may fill the
   * budget). Set by the pool's admission; by default the share always binds.
   */
  aboveBusy: (className: string) => boolean = () => true

  /** The share of the endpoint's prefill budget a request of `className` may fill now. */
  private share(className: string, limits: GateLimits, pastGuard: boolean): number {
    if (pastGuard || limits.prefillShare >= 1) return 1
    return this.aboveBusy(className) ? limits.prefillShare : 1
  }

  /** True while `className` has had an arrival lately: the decode guard's headroom below it holds. */
  set classActive(f: (className: string) => boolean) {
    this.guard.active = f
  }

  /** Called when the decode guard may have opened (DecodeGuard.onChange). */
  set onChange(f: () => void) {
    this.guard.onChange = f
  }

  /** Called when an endpoint's engine began a step (a prompt held for a promise may go). */
  onStepBegin: () => void = () => {}

  /**
   * The gate for one request of `className`: room in its class's share of the prefill
   * budget (while a class above it has work), a decode within the TPOT objectives, and
   * headroom, and no first-token promise broken (breaksPromise); `how`: GateOptions.
   */
  open(
    className: string,
    kvTokens: number,
    promptTokens: number,
    how: GateOptions = GATE_DEFAULTS,
  ): (v: EndpointView) => boolean {
    const limits = this.limits.get(className) as GateLimits
    const priority = this.priorityOf(className)
    const pastGuard = how.pastGuard === true
    const keepPromises = how.keepPromises !== false
    const computeAt = how.computeAt
    return (v) => {
      const tokens = computeAt?.(v) ?? promptTokens
      const budget = this.budget(v).tokens * this.share(className, limits, pastGuard)
      if (!fitsBudget(this.prefilling.at(v.name), tokens, budget)) return false
      if (!pastGuard && !this.guard.allows(className, v.name, leastStepOf(v), this.nextStepAt)) return false
      if (!hasHeadroom(v, limits, kvTokens, this.prefilling.requestsAt(v.name))) return false
      // last: it walks the ledger's prompts (the guard's next step does only while the guard is open)
      return pastGuard || !keepPromises || !this.breaksPromise(v.name, tokens, priority)
    }
  }

  /**
   * The step after the one in progress at `endpoint`, with the prompts sent there since it
   * began (DecodeGuard.allows); undefined with none pending or no stream decoding there.
   */
  private readonly nextStepAt = (endpoint: string): NextStep | undefined => {
    const tl = this.timeline(endpoint)
    if (tl.decoding === 0 || this.prefilling.at(endpoint) === 0) return undefined
    const pending = this.nextTokens(endpoint, this.phase(endpoint))
    return pending <= 0 ? undefined : { stepMs: tl.nextStepMs(pending), streams: tl.decoding }
  }

  /** Prompt tokens sent to `endpoint` that the step in progress (`phase`) did not take: the next step's. */
  private nextTokens(endpoint: string, phase: Phase): number {
    return Math.max(0, this.prefilling.at(endpoint) - phase.inStepTokens)
  }

  /** A class's priority (lower runs first); 0 for none. */
  private priorityOf(className: string | undefined): number {
    return className === undefined ? 0 : (this.priorities.get(className) ?? 0)
  }

  /** True when `tokens` more sent to `endpoint` now would break a first-token promise (first-token-promise.ts). */
  private breaksPromise(endpoint: string, tokens: number, priority: number): boolean {
    return breaksPromise(
      this.timeline(endpoint),
      this.prefilling,
      endpoint,
      tokens,
      priority,
      this.clock.now(),
    )
  }

  /**
   * When `v` is expected to open for this request (0: it is open now): the prefill budget
   * when its pending prompts have their first tokens, the decode guard when its ITL mean
   * is expected back within the limit, headroom (a batch slot, KV room) when `slotFreeInMs` says a request there ends.
   * Each gate that is closed must open: the latest of them.
   */
  reopenInMs(
    v: EndpointView,
    className: string,
    kvTokens: number,
    promptTokens: number,
    slotFreeInMs: (endpoint: string) => number,
    computeAt?: ComputeAt,
  ): number {
    const limits = this.limits.get(className)!
    let ms = 0
    const tokens = computeAt?.(v) ?? promptTokens
    const budget = this.budget(v).tokens * this.share(className, limits, false)
    if (!fitsBudget(this.prefilling.at(v.name), tokens, budget)) {
      ms = this.prefilling.roomInMs(v.name, tokens, budget, this.clock.now())
    }
    ms = Math.max(ms, this.guard.reopenInMs(v.name, className, leastStepOf(v))) // 0 while it allows
    if (this.breaksPromise(v.name, tokens, this.priorityOf(className)))
      ms = Math.max(ms, this.phase(v.name).residualMs)
    if (!hasHeadroom(v, limits, kvTokens, this.prefilling.requestsAt(v.name))) {
      ms = Math.max(ms, slotFreeInMs(v.name))
    }
    return ms
  }

  /** True when the endpoint has KV room for `kvTokens` under the class's limit. */
  kvFits(className: string, v: EndpointView, kvTokens: number): boolean {
    return kvFits(v, this.limits.get(className) as GateLimits, kvTokens)
  }

  /**
   * What the estimator reads of these endpoints now: the prompt tokens the gateway sent
   * each and that are not prefilled yet (the endpoint's own waiting queue, by its last
   * scrape, corrected, counts when it is longer: other clients, restarts), less those in the
   * engine step in progress; their live step time; and the time that step has left (phase).
   */
  serverView(views: readonly EndpointView[], meanPromptTokens: number): ServerView {
    let pending = 0
    let foreign = 0
    let steps = 0
    let measured = 0
    let residualMs = 0
    let decodeStepMs = 0
    for (const v of views) {
      decodeStepMs += this.decodeStepMs(v.name)
      const own = this.prefilling.at(v.name)
      const waiting = v.effective.waiting * meanPromptTokens
      const s = this.guard.itl(v.name)
      const phase = this.phase(v.name)
      pending += Math.max(own, waiting) - phase.inStepTokens
      foreign += Math.max(0, waiting - own)
      residualMs += phase.residualMs
      if (s !== undefined) {
        steps += s
        measured++
      }
    }
    const n = Math.max(1, views.length)
    return {
      endpoints: views.length,
      pendingTokens: pending / n,
      foreignTokens: foreign / n,
      stepMs: measured === 0 ? undefined : steps / measured,
      residualMs: residualMs / n,
      decodeStepMs: decodeStepMs / n,
    }
  }

  /** Where `endpoint`'s engine is in its step now (EngineTimeline.phase). */
  phase(endpoint: string): Phase {
    return this.timeline(endpoint).phase(this.clock.now())
  }

  /** The endpoint's engine facts, as its step model's priors (EngineTimeline.adoptPriors). */
  adoptStepPriors(endpoint: string, stepMs: number, prefillTokensPerS: number): void {
    this.timeline(endpoint).adoptPriors(stepMs, prefillTokensPerS)
  }

  /** The endpoint's engine timeline (created on first use, from the pool's priors). */
  timeline(endpoint: string): EngineTimeline {
    let tl = this.timelines.get(endpoint)
    if (tl === undefined) {
      tl = new EngineTimeline(this.stepPriors, this.prefilling, endpoint)
      this.timelines.set(endpoint, tl)
    }
    return tl
  }

  /**
   * Each of `views` as a dispatch forecast for a request of `className` starts from it
   * (dispatch-forecast.ts): `open` is its gate (EndpointGates.open) for the request.
   */
  endpointsNow(
    className: string,
    views: readonly EndpointView[],
    open: (v: EndpointView) => boolean,
    ends: (endpoint: string) => readonly RunningEnd[],
  ): EndpointNow[] {
    const limits = this.limits.get(className) as GateLimits
    const share = this.share(className, limits, false)
    return views.map((v) => {
      const slots = freeSlots(v, limits)
      const kvFree = kvFreeTokens(v, limits)
      const tl = this.timeline(v.name)
      const phase = this.phase(v.name)
      return {
        residualMs: phase.residualMs,
        stepMs: Math.max(phase.residualMs, tl.stepMs()),
        inStepTokens: phase.inStepTokens,
        nextTokens: this.nextTokens(v.name, phase),
        decodes: tl.decoding,
        contextTokens: tl.contextTokens,
        budgetTokens: this.budget(v).tokens * share,
        guard: this.guard.window(className, v.name, leastStepOf(v)),
        openNow: open(v),
        slots,
        kvFree,
        ends: ends(v.name),
        model: tl.model,
      }
    })
  }

  /** A decode step at `endpoint` now (its streams, no prompt), by its step model, ms. */
  decodeStepMs(endpoint: string): number {
    return this.timeline(endpoint).nextStepMs(0)
  }

  /** A request's first token came from `endpoint` at `now`: its prompt is done, its stream decodes. */
  firstToken(endpoint: string, now: number, promptTokens: number): void {
    this.timeline(endpoint).firstToken(now, promptTokens)
  }

  /** A stream past its first token ended at `endpoint`, with `contextTokens` of context. */
  decoderLeft(endpoint: string, contextTokens: number): void {
    this.timelines.get(endpoint)?.decoderLeft(contextTokens)
  }

  /** A token of `stream` reached the gateway from `endpoint` at `now` (EngineTimeline.tokenFrom). */
  tokenFrom(endpoint: string, stream: StepMark, now: number): void {
    if (this.timeline(endpoint).tokenFrom(stream, now)) this.onStepBegin()
  }

  /** When the step of `endpoint` whose end brought a token at `now` began; undefined when unknown. */
  stepBegan(endpoint: string, now: number): number | undefined {
    return this.timelines.get(endpoint)?.stepBegan(now)
  }

  /** The endpoint's prefill budget now: the override, else from its engine facts (prefill-budget.ts). */
  budget(v: { readonly facts?: EngineFactsView | undefined }): PrefillBudget {
    if (this.budgetOverride !== undefined)
      return { tokens: this.budgetOverride, bound: 'config', source: 'config' }
    return prefillBudget(v.facts ?? this.standIn, this.tightestTtftMs)
  }

  /** Prompt tokens sent to `endpoint` and not prefilled yet. */
  pendingAt(endpoint: string): number {
    return this.prefilling.at(endpoint)
  }

  /** The endpoint's live step time, ms (undefined when unmeasured). */
  itl(endpoint: string): number | undefined {
    return this.guard.itl(endpoint)
  }

  /**
   * A request of `promptTokens` was sent to `endpoint`, its first token expected in
   * `expectedMs`: counts its prompt until its first token. Returns the call that uncounts
   * the prompt (once). `joined`: told the prompt tokens sent there after it, until then.
   * `promiseBy`: by when its client was told its first token comes (the prompts of its class
   * `className` or below sent after it keep that: breaksPromise).
   */
  dispatched(
    endpoint: string,
    promptTokens: number,
    expectedMs: number,
    joined?: JoinedSink,
    promiseBy?: number,
    className?: string,
  ): () => void {
    const now = this.clock.now()
    const priority = this.priorityOf(className)
    return this.prefilling.add(endpoint, promptTokens, now + expectedMs, joined, now, promiseBy, priority)
  }

  /** A stream's TPOT, in all or so far, for its class's TPOT margin (DecodeGuard.judgeTpot). */
  judgeTpot(className: string, tpotMs: number, final: boolean): boolean {
    return this.guard.judgeTpot(className, tpotMs, final)
  }

  /** The TPOT margin of `className` (undefined without a TPOT objective). */
  tpotMargin(className: string): number | undefined {
    return this.guard.margin(className)
  }

  /** A gap between two tokens of a stream from `endpoint`: into its live ITL. Returns a window's mean when one closed. */
  observeGap(endpoint: string, stream: StepMark, gapMs: number, now: number): ItlWindow | undefined {
    this.tokenFrom(endpoint, stream, now)
    return this.guard.observe(endpoint, gapMs, now)
  }

  state(views: readonly EndpointView[]): {
    prefillingTokens: Record<string, number>
    prefillBudget: Record<string, PrefillBudget>
    itlMs: Record<string, number | null>
    tpotMargin: Record<string, number>
    engineSteps: Record<string, object>
  } {
    return {
      prefillingTokens: this.prefilling.state(),
      prefillBudget: Object.fromEntries(views.map((v) => [v.name, this.budget(v)])),
      itlMs: this.guard.state(),
      tpotMargin: this.guard.margins(),
      // each endpoint's step model, learned from the steps the gateway saw it run (step-timeline.ts)
      engineSteps: Object.fromEntries([...this.timelines].map(([name, tl]) => [name, tl.state()])),
    }
  }
}
