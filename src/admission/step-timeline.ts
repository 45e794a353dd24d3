/**
 * Where an endpoint's engine is in its work, step by step, as the gateway sees it, and how
 * long its steps take: the engine's step time learned from the steps it ran.
 *
 * An engine with continuous batching (vLLM, SGLang, TGI, TensorRT-LLM) runs one forward
 * pass (a step) after another. Every sequence in its running batch gets one token per step,
 * and a prompt is prefilled in the step that takes it (chunked past the step's token
 * budget). A step's time is, to a good approximation, linear in what it computes:
 *
 *   step = a + b · prompt tokens prefilled + c · decoding sequences + e · context tokens (thousands)
 *
 * a the weights' read (memory bound), b a prompt token's compute, c a sequence's sampling and
 * bookkeeping, e attention's read of the KV cache. The gateway sees each step end (the token
 * it brings every stream there, within a millisecond of each other) and knows what it sent:
 * the prompts pending there when a step began were taken into it, and the streams past their
 * first token decoded in it, each with its prompt and the tokens it had so far as context.
 * So each observed step is one equation, and a, b, c, e are fitted online (recursive least
 * squares with forgetting, from the engine's facts as priors: its step time, its prefill rate).
 *
 * With the model, the gateway knows when the step in progress will end (the time a request
 * sent now waits before any work on it begins) and how long the next one will be with a
 * given prompt in it: a prediction from the engine's own arithmetic, not from the live
 * inter-token latency, which averages prefill steps of hundreds of ms with decode steps of
 * ten. Other clients' requests at the engine are not seen; the fit's constant takes their
 * mean share.
 */
import type { PrefillLedger } from './prefill-ledger.js'
import { priorMoved, RESEED_BELOW, Rls } from './rls.js'

/** A step's features: [1, prompt tokens prefilled, decoding sequences, context tokens / 1000]. */
export type StepFeatures = readonly [number, number, number, number]

const FORGETTING = 0.998
/**
 * Prior per-sequence and per-1k-context costs (ms): a sequence's sampling and bookkeeping,
 * and attention's read of 1k tokens of KV cache (an 8B model's 128 KiB a token at ~2 TB/s
 * is ~0.06 ms per 1k). Wide spreads: the fit finds the engine's own within a few steps.
 */
const PRIOR_PER_SEQ_MS = 0.01
const PRIOR_PER_1K_CONTEXT_MS = 0.05
/** A step observed longer than this many times its prediction was not one step (the engine idled, or a step was missed). */
const OUTLIER_FACTOR = 4
/** Events of one endpoint this close together end the same engine step, ms. */
export const SAME_STEP_MS = 1
/**
 * A prompt sent this long before the gateway saw a step begin most likely missed it: it
 * reaches the engine's queue a transit after it is sent, and the step's first token reaches
 * the gateway a transit after the step began, ms.
 */
export const MISSED_STEP_MS = 2

export interface StepPriors {
  /** One decode step of a small batch, ms. */
  readonly stepMs: number
  /** Prompt tokens per second the engine prefills. */
  readonly prefillTokensPerS: number
}

/** The step time model of one engine (see above). */
export class StepModel {
  private rls: Rls
  private samples = 0
  private priors: StepPriors

  constructor(priors: StepPriors) {
    this.priors = priors
    this.rls = stepRls(priors)
  }

  /**
   * New priors (the engine's facts): re-seeds the model while it has learned few steps of
   * its own (rls.ts). Without it, an engine more than OUTLIER_FACTOR times slower than the
   * priors (a llama.cpp server on CPU at ~100 ms a step, against the default 15 ms) had
   * every step judged an outlier and never learned, and the TTFT estimator priced its decode
   * step at 15 ms.
   */
  adoptPriors(stepMs: number, prefillTokensPerS: number): void {
    if (this.samples >= RESEED_BELOW) return
    const p = this.priors
    if (!priorMoved(stepMs, p.stepMs) && !priorMoved(prefillTokensPerS, p.prefillTokensPerS)) return
    this.priors = { stepMs, prefillTokensPerS }
    this.rls = stepRls(this.priors)
    this.samples = 0
  }

  ms(prefillTokens: number, decodes: number, contextTokens: number): number {
    return Math.max(0, this.rls.predict([1, prefillTokens, decodes, contextTokens / 1000]))
  }

  observe(x: StepFeatures, ms: number): void {
    this.rls.update(x, ms)
    this.samples++
  }

  state(): object {
    const [a, b, c, e] = this.rls.w
    return {
      baseMs: round(a ?? 0, 2),
      perPrefillTokenMs: round(b ?? 0, 5),
      perSeqMs: round(c ?? 0, 4),
      per1kContextMs: round(e ?? 0, 4),
      steps: this.samples,
    }
  }
}

function stepRls(p: StepPriors): Rls {
  const perToken = 1000 / p.prefillTokensPerS
  return new Rls([p.stepMs, perToken, PRIOR_PER_SEQ_MS, PRIOR_PER_1K_CONTEXT_MS], FORGETTING, [
    p.stepMs,
    perToken,
    PRIOR_PER_SEQ_MS * 4,
    PRIOR_PER_1K_CONTEXT_MS * 4,
  ])
}

interface Step {
  readonly start: number
  prefill: number
  decodes: number
  context: number
  /** Its predicted length, ms. */
  ms: number
  /** Tokens of two steps were read together in it: its length is not known. */
  blurred: boolean
}

/** A stream's mark of the last engine step whose start brought it a token, and when (EngineTimeline.tokenFrom). */
export interface StepMark {
  stepSeen: number
  stepSeenAt: number
}

/** Where an endpoint's engine is in its step (EngineTimeline.phase). */
export interface Phase {
  /** Prompt tokens the gateway sent before the step in progress began: the server took them into it. */
  readonly inStepTokens: number
  /** Ms until that step ends. */
  readonly residualMs: number
}

const NO_PHASE: Phase = { inStepTokens: 0, residualMs: 0 }

/**
 * One endpoint's engine as the gateway sees it: the streams decoding there (the gateway's
 * own, past their first token) and their context, the step in progress, and its step model.
 *
 * Step ends: one engine step brings every stream there a token, and the gateway reads them
 * one by one (over milliseconds, when it is busy): a stream that already had a token when
 * the step in progress began marks a new step (its start, the first such token). Where
 * nothing decodes, every token ends a step. A gateway that fell behind reads a stream's
 * tokens of two steps together: that step's end is not known, so it is not learned (counted
 * as steps, such reads taught a decode step of 6 ms where the engine took 12).
 */
export class EngineTimeline {
  readonly model: StepModel
  /** Streams past their first token, and their context tokens (prompt + tokens so far). */
  private decodes = 0
  private context = 0
  private step: Step | undefined = undefined
  /** The step in progress's number, and when the one before began. */
  private index = 0
  private prevStart: number | undefined = undefined
  /** The streams that were decoding when the step in progress began, the gaps read of them since, and the ended step's length. */
  private gapsDue = 0
  private gapsRead = 0
  private endedMs = 0

  constructor(
    priors: StepPriors,
    /** The prompts the gateway sent and that await their first token (prefill-ledger.ts). */
    private readonly ledger: PrefillLedger,
    private readonly endpoint: string,
  ) {
    this.model = new StepModel(priors)
  }

  /** A token of `stream` reached the gateway at `now`: a new step began when it says so (above); true then. */
  tokenFrom(stream: StepMark, now: number): boolean {
    const s = this.step
    let begins = s === undefined || (this.decodes === 0 && now - s.start > SAME_STEP_MS)
    if (s !== undefined && stream.stepSeen === this.index) {
      // A stream's next token within a millisecond of its last: its tokens of two steps were
      // read together (the gateway fell behind), so where the step ended is not known; the
      // step is not learned, and the next token of a stream seen in it begins the next.
      if (now - stream.stepSeenAt < SAME_STEP_MS) s.blurred = true
      else begins = true
    }
    const gap = stream.stepSeen >= 0
    if (begins) {
      this.prevStart = s?.start
      if (s !== undefined) this.index++
      this.stepEnded(now)
      this.gapsDue = this.decodes
      this.gapsRead = 0
      this.endedMs = s === undefined ? 0 : now - s.start
    }
    if (gap) this.gapsRead++
    stream.stepSeen = this.index
    stream.stepSeenAt = now
    return begins
  }

  /**
   * A step ended at `now`: it is learned, and the next one began with the prompts sent
   * before now and not yet prefilled, and the streams decoding now.
   */
  private stepEnded(now: number): void {
    const s = this.step
    if (s !== undefined) {
      const took = now - s.start
      if (!s.blurred && took <= OUTLIER_FACTOR * Math.max(s.ms, 1))
        this.model.observe([1, s.prefill, s.decodes, s.context / 1000], took)
      // each stream decoding in it got a token: a token more of context for the next
      this.context += this.decodes
    }
    const prefill = this.ledger.sentBy(this.endpoint, now - MISSED_STEP_MS)
    const step: Step = {
      start: now,
      prefill,
      decodes: this.decodes,
      context: this.context,
      ms: 0,
      blurred: false,
    }
    step.ms = this.model.ms(prefill, step.decodes, step.context)
    this.step = step
  }

  /** True while `now` is within the arrival of the tokens that began the step in progress. */
  private inBurst(now: number): boolean {
    const s = this.step
    return s !== undefined && now - s.start <= Math.max(SAME_STEP_MS, s.ms / 2)
  }

  /**
   * The gaps the step that just ended owes the streams whose tokens of its end are not read
   * yet (each of that step's length), while its burst is read; undefined with none.
   */
  unreadGaps(now: number): { gapMs: number; count: number } | undefined {
    if (this.endedMs <= 0 || this.gapsRead >= this.gapsDue || !this.inBurst(now)) return undefined
    return { gapMs: this.endedMs, count: this.gapsDue - this.gapsRead }
  }

  /** When the step whose end brought a token at `now` began; undefined when unknown. */
  stepBegan(now: number): number | undefined {
    return this.inBurst(now) ? this.prevStart : this.step?.start
  }

  /**
   * A stream's first token came at `now` (its prompt already out of the ledger): its prompt
   * (`promptTokens`) is its context, and it decodes from now on. When its token came with
   * those that began the step in progress, that step decodes it instead of prefilling it:
   * the step's prompts are those the ledger still holds from before it began. (Not its
   * count less this prompt: when this token was the one that began the step, the step never
   * counted it, and taking it off again mislabelled a cold engine's first steps.)
   */
  firstToken(now: number, promptTokens: number): void {
    this.decodes++
    this.context += promptTokens + 1
    const s = this.step
    if (s !== undefined && this.inBurst(now)) {
      s.prefill = this.ledger.sentBy(this.endpoint, s.start - MISSED_STEP_MS)
      s.decodes = this.decodes
      s.context = this.context
      s.ms = this.model.ms(s.prefill, s.decodes, s.context)
    }
  }

  /** A stream past its first token ended, with `contextTokens` of context (prompt + tokens streamed). */
  decoderLeft(contextTokens: number): void {
    this.decodes = Math.max(0, this.decodes - 1)
    this.context = Math.max(0, this.context - contextTokens)
    if (this.decodes === 0) this.context = 0
  }

  /** The endpoint's engine facts as priors (StepModel.adoptPriors). */
  adoptPriors(stepMs: number, prefillTokensPerS: number): void {
    this.model.adoptPriors(stepMs, prefillTokensPerS)
  }

  /** Streams decoding here (the gateway's own). */
  get decoding(): number {
    return this.decodes
  }

  /** Their context tokens. */
  get contextTokens(): number {
    return this.context
  }

  /**
   * Where the engine is in its step at `now`: the prompts the step in progress took, and
   * the time it has left (0 when it is due, or when nothing runs or waits there: the engine
   * begins a step when a request comes). None seen yet: no step known in progress.
   */
  phase(now: number): Phase {
    const s = this.step
    if (s === undefined) return NO_PHASE
    const inStepTokens = this.ledger.sentBy(this.endpoint, s.start - MISSED_STEP_MS)
    const idle = this.decodes === 0 && this.ledger.at(this.endpoint) === 0
    return { inStepTokens, residualMs: idle ? 0 : Math.max(0, s.start + s.ms - now) }
  }

  /** When the step in progress began (undefined: none seen yet). */
  stepStart(): number | undefined {
    return this.step?.start
  }

  /** The predicted length of the step in progress, ms (0: none known). */
  stepMs(): number {
    return this.step?.ms ?? 0
  }

  /** A step after this one with `prefillTokens` of prompt in it, at the streams decoding now, ms. */
  nextStepMs(prefillTokens: number): number {
    return this.model.ms(prefillTokens, this.decodes, this.context + this.decodes)
  }

  state(): object {
    return { decodingStreams: this.decodes, contextTokens: this.context, stepModel: this.model.state() }
  }
}

function round(v: number, digits: number): number {
  const f = 10 ** digits
  return Math.round(v * f) / f
}
