/**
 * What the gateway knows of one endpoint's engine, learned at run time instead of
 * configured, each value with where it came from:
 *
 * - `config`: the operator set it (an override: nothing learned replaces it);
 * - `measured`: the gateway's own observations of the requests it sent there;
 * - `engine_metric`: the engine's /metrics says it (vLLM's histograms, cache_config_info);
 * - `default_prior`: nothing known yet; the shipped default.
 *
 * The facts:
 *
 * - `prefillTokensPerS`, the engine's prefill rate. Measured from each streamed request's
 *   dispatch to first token against the prompt tokens it met there (those pending at the
 *   endpoint plus its own to compute): the least-squares slope, over decayed sums, when the
 *   prompts' lengths spread enough (coefficient of variation ≥ 0.25), else the ratio of
 *   tokens to time less 1.5 steps (half a step waiting for the one in progress, plus the
 *   prefill step's fixed cost). Before MIN_SAMPLES of its own, vLLM's prefill-time and
 *   prompt-token histograms of the requests it finished: prompt tokens (less prefix-cache
 *   hits) over prefill time less one step per request. A restarted gateway has the engine's
 *   history at its first scrape.
 * - `stepMs`, one engine step with a small batch: the lower quartile of the window means of
 *   the inter-token gaps of the endpoint's streams (the decode guard's windows) over the
 *   last RING windows: windows with a prefill step in them are longer, and the least of them
 *   would be biased low by jitter (a late chunk shortens the gap after it).
 * - `stepTokens`, the most prompt tokens one step computes (vLLM's max_num_batched_tokens):
 *   `capacity.max_num_batched_tokens`, else the engine's default, raised to the largest step
 *   the engine's iteration-tokens histogram shows (an engine never steps past its budget).
 * - `kvCapacityTokens`, `blockSize`: cache_config_info (or `capacity.kv_tokens`).
 * - `maxNumSeqs`: `capacity.max_num_seqs` (vLLM does not export it).
 */
import { type AdmissionConfig, configured, type EngineName } from '../config/schema.js'
import type { BackendLoad } from './types.js'

export type FactSource = 'config' | 'measured' | 'engine_metric' | 'default_prior'

export interface Fact {
  readonly value: number
  readonly source: FactSource
}

/** What admission reads of an endpoint's engine facts, and tells them of its requests. */
export interface EngineFactsView {
  prefillTokensPerS(): Fact
  stepMs(): Fact
  stepTokens(): Fact
  /** A streamed request met `tokens` of prompt at the endpoint and had its first token `serverMs` after dispatch. */
  observePrefill(tokens: number, serverMs: number): void
  /** A window of the endpoint's inter-token gaps closed with this mean, ms. */
  observeStepWindow(meanMs: number): void
  /** Each fact with its source, for /admin/state. */
  state(): object
}

/** The engines' default step budgets (tokens per step), when neither config nor metrics say. */
export const DEFAULT_STEP_TOKENS: Readonly<Record<EngineName, number>> = {
  // vLLM V1's max_num_batched_tokens for the OpenAI server (chunked prefill)
  vllm: 8192,
  // vLLM V0 without chunked prefill: max(max_model_len, 2048); 2048 is the least
  'vllm-v0': 2048,
  // SGLang's chunked_prefill_size on large GPUs
  sglang: 8192,
  // TGI's max_batch_prefill_tokens
  tgi: 4096,
  // llama.cpp server's n_batch
  llamacpp: 2048,
  // trtllm-serve's max_num_tokens
  trtllm: 8192,
}

/** Own samples before the measured prefill rate is trusted over the engine's histograms. */
export const MIN_SAMPLES = 8
/** Decay of the measured sums per sample (about the last 100 requests). */
const DECAY = 0.99
/** Window means kept for the step time. */
const RING = 32
/** The quantile of the window means taken as the step time. */
const STEP_QUANTILE = 0.25
/** Windows before the measured step time is trusted. */
const MIN_WINDOWS = 3
/** The engine's histograms are read once they hold this many requests. */
const MIN_ENGINE_REQUESTS = 5
/** Plausible prefill rates, tokens/s: outside, a measurement is noise. */
const RATE_RANGE = [50, 5e7] as const

export interface EngineFactsOptions extends EstimatorPriorFacts {
  readonly engine: EngineName
  /** capacity.* of the pool, when set. */
  readonly stepTokens?: number | undefined
  readonly kvTokens?: number | undefined
  readonly maxNumSeqs?: number | undefined
}

/** The estimator's priors as facts: `config` where the operator set them, else `default_prior`. */
export function priorsFrom(a: AdmissionConfig): EstimatorPriorFacts {
  return {
    stepMs: { value: a.estimator.step_ms, source: configured(a, 'step_ms') ? 'config' : 'default_prior' },
    prefillTokensPerS: {
      value: a.estimator.prefill_tokens_per_s,
      source: configured(a, 'prefill_tokens_per_s') ? 'config' : 'default_prior',
    },
  }
}

export interface EstimatorPriorFacts {
  readonly stepMs: Fact
  readonly prefillTokensPerS: Fact
}

export class EngineFacts implements EngineFactsView {
  private readonly opts: EngineFactsOptions
  // measured prefill: decayed sums of x = tokens, y = ms
  private n = 0
  private count = 0
  private sx = 0
  private sy = 0
  private sxx = 0
  private sxy = 0
  private readonly windows: number[] = []
  /** The quantile of `windows`, kept until the next window (stepMs() is read on every dispatch). */
  private step: number | undefined = undefined
  private load: BackendLoad | undefined = undefined

  constructor(opts: EngineFactsOptions) {
    this.opts = opts
  }

  /** A scrape landed: what the engine's metrics say. */
  scraped(load: BackendLoad): void {
    this.load = load
  }

  /**
   * One streamed request: `tokens` of prompt it met at the endpoint (pending there at
   * dispatch plus its own to compute), `serverMs` from dispatch to its first token.
   */
  observePrefill(tokens: number, serverMs: number): void {
    if (!(tokens > 0) || !(serverMs >= 0)) return
    this.n = this.n * DECAY + 1
    this.sx = this.sx * DECAY + tokens
    this.sy = this.sy * DECAY + serverMs
    this.sxx = this.sxx * DECAY + tokens * tokens
    this.sxy = this.sxy * DECAY + tokens * serverMs
    this.count++
  }

  /** A window of the endpoint's inter-token gaps closed with this mean, ms. */
  observeStepWindow(meanMs: number): void {
    if (!(meanMs > 0)) return
    this.windows.push(meanMs)
    if (this.windows.length > RING) this.windows.shift()
    this.step = undefined
  }

  prefillTokensPerS(): Fact {
    if (this.opts.prefillTokensPerS.source === 'config') return this.opts.prefillTokensPerS
    const measured = this.count >= MIN_SAMPLES ? this.measuredRate() : undefined
    if (measured !== undefined) return { value: measured, source: 'measured' }
    const engine = this.engineRate()
    if (engine !== undefined) return { value: engine, source: 'engine_metric' }
    return this.opts.prefillTokensPerS
  }

  stepMs(): Fact {
    if (this.opts.stepMs.source === 'config' || this.windows.length < MIN_WINDOWS) return this.opts.stepMs
    if (this.step === undefined) {
      const sorted = this.windows.slice().sort((a, b) => a - b)
      this.step = sorted[Math.floor((sorted.length - 1) * STEP_QUANTILE)] ?? 0
    }
    return { value: this.step, source: 'measured' }
  }

  stepTokens(): Fact {
    if (this.opts.stepTokens !== undefined) return { value: this.opts.stepTokens, source: 'config' }
    const prior = DEFAULT_STEP_TOKENS[this.opts.engine]
    const seen = this.load?.largestStepTokens
    if (seen !== undefined && seen > prior) return { value: seen, source: 'engine_metric' }
    return { value: prior, source: 'default_prior' }
  }

  kvCapacityTokens(): Fact | undefined {
    if (this.opts.kvTokens !== undefined) return { value: this.opts.kvTokens, source: 'config' }
    const v = this.load?.kvCapacityTokens
    return v === undefined ? undefined : { value: v, source: 'engine_metric' }
  }

  blockSize(): Fact | undefined {
    const v = this.load?.blockSize
    return v === undefined ? undefined : { value: v, source: 'engine_metric' }
  }

  maxNumSeqs(): Fact | undefined {
    const v = this.opts.maxNumSeqs
    return v === undefined ? undefined : { value: v, source: 'config' }
  }

  /** Tokens/s from the gateway's own samples; undefined when they say nothing plausible. */
  private measuredRate(): number | undefined {
    const n = this.n
    const mx = this.sx / n
    const my = this.sy / n
    const varX = this.sxx / n - mx * mx
    const cov = this.sxy / n - mx * my
    let msPerToken: number
    if (varX > (0.25 * mx) ** 2 && cov > 0) msPerToken = cov / varX
    else msPerToken = (my - 1.5 * this.stepMs().value) / mx
    return plausible(1000 / msPerToken)
  }

  /** Tokens/s from the engine's prefill-time and prompt-token histograms (vLLM V1). */
  private engineRate(): number | undefined {
    const l = this.load
    if (l?.prefillSecondsSum === undefined || l.prefillCount === undefined || l.promptTokensSum === undefined)
      return undefined
    if (l.prefillCount < MIN_ENGINE_REQUESTS) return undefined
    const computed = l.promptTokensSum - (l.prefixCacheHitsTotal ?? 0)
    const ms = l.prefillSecondsSum * 1000 - l.prefillCount * this.stepMs().value
    if (computed <= 0 || ms <= 0) return undefined
    return plausible((computed / ms) * 1000)
  }

  state(): object {
    const show = (f: Fact | undefined, digits = 0) =>
      f === undefined ? null : { value: round(f.value, digits), source: f.source }
    return {
      prefillTokensPerS: show(this.prefillTokensPerS()),
      stepMs: show(this.stepMs(), 2),
      stepTokens: show(this.stepTokens()),
      kvCapacityTokens: show(this.kvCapacityTokens()),
      blockSize: show(this.blockSize()),
      maxNumSeqs: show(this.maxNumSeqs()),
      prefillSamples: this.count,
      stepWindows: this.windows.length,
    }
  }
}

function plausible(tokensPerS: number): number | undefined {
  return Number.isFinite(tokensPerS) && tokensPerS >= RATE_RANGE[0] && tokensPerS <= RATE_RANGE[1]
    ? tokensPerS
    : undefined
}

function round(v: number, digits: number): number {
  const f = 10 ** digits
  return Math.round(v * f) / f
}
