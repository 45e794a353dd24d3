import { Deque } from './deque.js'
import { type BucketSpec, EngineStats } from './engine-stats.js'
import { KvBlockManager } from './kv-block-manager.js'
import type { SimProfile } from './profile-schema.js'
import { newStepPlan, type Queues, type StepPlan, scheduleStep } from './scheduler.js'
import type { SimRequest } from './sim-request.js'
import { stepTimeMs } from './step-model.js'

export interface EngineOptions {
  readonly profile: SimProfile
  /** Wall-clock multiplier: 4 = every step takes 4x its model time. Default 1. */
  readonly timeScale?: number
  /** Extra multiplier read at every step (the slow-down fault). Default 1. */
  readonly slowdown?: () => number
  /** Histogram buckets of the chosen metric format. */
  readonly buckets?: BucketSpec
}

/**
 * The simulated inference engine, free of I/O and timers: a pure step machine.
 *
 *   beginStep(t)  schedules the next batch at time t and returns how long it takes (ms, scaled);
 *   finishStep(u) applies it at time u: computed tokens, one output token per finished prefill or
 *                 decode, finished sequences freed.
 *
 * Whoever drives it (EngineLoop on a Clock, or a test) calls them alternately. Requests submitted
 * or aborted in between take effect at the next beginStep, as in vLLM.
 */
export class SimEngine {
  readonly profile: SimProfile
  readonly kv: KvBlockManager
  readonly stats: EngineStats
  private readonly timeScale: number
  private readonly slowdown: () => number
  private readonly q: Queues = { running: [], waiting: new Deque<SimRequest>() }
  private plan: StepPlan | null = null
  /** The plan's arrays, reused every step. */
  private readonly planBuffer = newStepPlan()
  private pendingAborts = 0
  /** Model time of the last step begun (ms, before scaling), for tests and the bench. */
  lastStepModelMs = 0

  constructor(opts: EngineOptions) {
    this.profile = opts.profile
    this.timeScale = opts.timeScale ?? 1
    this.slowdown = opts.slowdown ?? (() => 1)
    this.kv = new KvBlockManager(opts.profile.engine.numGpuBlocks, opts.profile.engine.blockSize)
    this.stats = new EngineStats(opts.buckets ?? {})
  }

  get numRunning(): number {
    return this.q.running.length
  }

  get numWaiting(): number {
    return this.q.waiting.length
  }

  get hasWork(): boolean {
    return this.q.running.length > 0 || this.q.waiting.length > 0
  }

  /** True between beginStep and finishStep. */
  get stepping(): boolean {
    return this.plan !== null
  }

  runningRequests(): readonly SimRequest[] {
    return this.q.running
  }

  submit(req: SimRequest): void {
    req.state = 'waiting'
    this.q.waiting.push(req)
    this.stats.requestsReceived++
  }

  /** The client went away: the sequence ends and frees its blocks at the next step. */
  abort(req: SimRequest): void {
    if (req.state === 'finished' || req.state === 'aborted' || req.abortRequested) return
    req.abortRequested = true
    this.pendingAborts++
  }

  /** Begins a step at `now`. Returns its wall duration in ms, or null when there is nothing to do. */
  beginStep(now: number): number | null {
    if (this.plan !== null) throw new Error('beginStep called twice without finishStep')
    if (this.pendingAborts > 0) this.dropAborted()
    if (!this.hasWork) return null
    const plan = scheduleStep(this.q, this.kv, this.profile.engine, this.stats, this.planBuffer)
    if (plan.length === 0) return null
    for (let i = 0; i < plan.length; i++) {
      const req = plan.reqs[i]!
      if (req.firstScheduled < 0) req.firstScheduled = now
    }
    this.plan = plan
    this.lastStepModelMs = stepTimeMs(this.profile.stepTime, plan.cost)
    return this.lastStepModelMs * this.timeScale * this.slowdown()
  }

  /** Completes the step begun last, at time `now` (normally its start + duration). */
  finishStep(now: number): void {
    const plan = this.plan
    if (plan === null) return
    this.plan = null
    const st = this.stats
    st.steps++
    st.busySlots += plan.length
    st.observe('iterationTokens', plan.cost.prefillTokens + plan.cost.decodeSeqs)
    let generated = 0
    let finishedAny = false
    for (let i = 0; i < plan.length; i++) {
      const req = plan.reqs[i]!
      const numNew = plan.numNew[i]!
      if (req.state !== 'running' || req.abortRequested) continue
      req.numComputed += numNew
      if (req.blockHashes.length > req.cached.length) this.registerFullBlocks(req)
      if (req.numComputed < req.numTokens) continue
      req.numOutput++
      generated++
      if (req.firstToken < 0) this.onFirstToken(req, now)
      else st.observe('itl', (now - req.lastToken) / 1000)
      req.lastToken = now
      if (req.numOutput >= req.targetOutput) {
        this.finish(req, now)
        finishedAny = true
        req.sink.onToken(req, req.finishReason)
      } else {
        req.sink.onToken(req, null)
      }
    }
    st.generationTokens += generated
    st.generationRate.add(now, generated)
    if (finishedAny) this.q.running = this.q.running.filter((r) => r.state === 'running')
  }

  private onFirstToken(req: SimRequest, now: number): void {
    const st = this.stats
    req.firstToken = now
    st.observe('ttft', (now - req.arrival) / 1000)
    st.promptTokens += req.promptTokens
    st.promptRate.add(now, req.promptTokens)
    st.prefillSeconds += (now - req.firstScheduled) / 1000
  }

  private finish(req: SimRequest, now: number): void {
    const st = this.stats
    req.state = 'finished'
    this.kv.free(req)
    st.finished[req.finishReason]++
    st.observe('e2e', (now - req.arrival) / 1000)
    st.observe('queue', (req.firstScheduled - req.arrival) / 1000)
    st.observe('inference', (now - req.firstScheduled) / 1000)
    st.observe('prefill', (req.firstToken - req.firstScheduled) / 1000)
    st.observe('decode', (now - req.firstToken) / 1000)
    st.decodeSeconds += (now - req.firstToken) / 1000
    if (req.numOutput > 1) st.observe('tpotRequest', (now - req.firstToken) / 1000 / (req.numOutput - 1))
    st.observe('promptTokens', req.promptTokens)
    st.observe('generationTokens', req.numOutput)
  }

  private registerFullBlocks(req: SimRequest): void {
    const full = Math.min(Math.floor(req.numComputed / this.kv.blockSize), req.blockHashes.length)
    for (let b = req.cached.length; b < full; b++) this.kv.register(req, req.blockHashes[b]!)
  }

  private dropAborted(): void {
    const gone = (r: SimRequest): boolean => {
      if (!r.abortRequested) return false
      this.kv.free(r)
      r.state = 'aborted'
      this.stats.finished.abort++
      return true
    }
    this.q.running = this.q.running.filter((r) => !gone(r))
    this.q.waiting.retain((r) => !gone(r))
    this.pendingAborts = 0
  }
}
