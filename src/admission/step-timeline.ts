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
import { Rls } from './rls.js'

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

  constructor(priors: StepPriors) {
    this.rls = stepRls(priors)
  }

  ms(prefillTokens: number, decodes: number, contextTokens: number): number {
    return Math.max(0, this.rls.predict([1, prefillTokens, decodes, contextTokens / 1000]))
  }

  observe(x: StepFeatures, ms: number): void {
    this.rls.update(x, ms)
    this.samples++
  }

  /** New priors (the engine's facts changed) re-seed the fit while it has seen few steps. */
  adoptPriors(priors: StepPriors): void {
    if (this.samples < 32) this.rls = stepRls(priors)
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
}

/**
 * One endpoint's engine as the gateway sees it: the streams decoding there (the gateway's
 * own, past their first token) and their context, the step in progress, and its step model.
 */
export class EngineTimeline {
  readonly model: StepModel
  /** Streams past their first token, and their context tokens (prompt + tokens so far). */
  private decodes = 0
  private context = 0
  private step: Step | undefined = undefined

  constructor(priors: StepPriors) {
    this.model = new StepModel(priors)
  }

  /**
   * A step ended at `now` (a token from the endpoint reached the gateway): it is learned, and
   * the next one began with `pendingTokens` of prompt (those sent before now, not yet
   * prefilled; at most `stepTokens`, the engine's token budget less its decodes) and the
   * streams decoding now (EndpointGates.tokenFrom tells one step end from the next).
   */
  stepEnded(now: number, pendingTokens: number, stepTokens: number): void {
    const s = this.step
    if (s !== undefined) {
      const took = now - s.start
      if (took <= OUTLIER_FACTOR * Math.max(s.ms, 1))
        this.model.observe([1, s.prefill, s.decodes, s.context / 1000], took)
      // each stream decoding in it got a token: a token more of context for the next
      this.context += this.decodes
    }
    const prefill = Math.max(0, Math.min(pendingTokens, stepTokens - this.decodes))
    const step: Step = { start: now, prefill, decodes: this.decodes, context: this.context, ms: 0 }
    step.ms = this.model.ms(prefill, step.decodes, step.context)
    this.step = step
  }

  /**
   * A stream's first token came: its prompt (`promptTokens`, of which it computed
   * `computeTokens`) is its context, and it decodes from now on. `inNewStep`: its token came
   * with those that began the step in progress, which counted it as prefilling: it decodes
   * in that one instead.
   */
  firstToken(promptTokens: number, computeTokens: number, inNewStep: boolean): void {
    this.decodes++
    this.context += promptTokens + 1
    const s = this.step
    if (s !== undefined && inNewStep) {
      s.prefill = Math.max(0, s.prefill - computeTokens)
      this.reprice(s)
    }
  }

  /** Streams decoding here (the gateway's own). */
  get decoding(): number {
    return this.decodes
  }

  /** Their context tokens. */
  get contextTokens(): number {
    return this.context
  }

  /** Nothing decodes here (the gateway's streams). */
  idle(): boolean {
    return this.decodes === 0
  }

  /** A stream past its first token ended, with `contextTokens` of context (prompt + tokens streamed). */
  decoderLeft(contextTokens: number): void {
    this.decodes = Math.max(0, this.decodes - 1)
    this.context = Math.max(0, this.context - contextTokens)
    if (this.decodes === 0) this.context = 0
  }

  private reprice(s: Step): void {
    s.decodes = this.decodes
    s.context = this.context
    s.ms = this.model.ms(s.prefill, s.decodes, s.context)
  }

  /**
   * Ms until the step in progress ends (0 when none is known, or it is overdue: then it
   * ends any moment). `idle`: nothing runs or waits there (the engine begins a step when
   * a request comes).
   */
  residualMs(now: number, idle: boolean): number {
    const s = this.step
    if (s === undefined || idle) return 0
    return Math.max(0, s.start + s.ms - now)
  }

  /** The predicted length of the step in progress, ms (0: none known). */
  stepMs(): number {
    return this.step?.ms ?? 0
  }

  /** The prompt tokens the step in progress is prefilling. */
  inStepTokens(): number {
    return this.step?.prefill ?? 0
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
