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
 *   endpoint, its own to compute, those sent after it before its first token), over the
 *   last PREFILL_RING samples: those of requests that met no other prompt when there are
 *   MIN_SAMPLES of them (their time is their own prefill), else all. The slope of their
 *   lower-quantile line (quantile-line.ts) when the prompts' lengths spread enough
 *   (coefficient of variation ≥ 0.25), else the lower quantile of time less 1.5 steps (half
 *   a step waiting for the one in progress, plus the prefill step's fixed cost) per token.
 *   A low quantile, not a mean: what delays a first token besides the engine's work (a
 *   busy gateway, a cold connection, a late timer, another client's request) only adds,
 *   and one such delay on a short prompt tilted a least-squares line by 10% and more.
 *   Before MIN_SAMPLES of its own, vLLM's prefill-time and
 *   prompt-token histograms of the requests it finished: prompt tokens (less prefix-cache
 *   hits) over prefill time less one step per request. A restarted gateway has the engine's
 *   history at its first scrape.
 * - `stepMs`, one engine step with a small batch: the lower quartile, over the last RING
 *   windows of the endpoint's inter-token gaps (the decode guard's), of the mean gap of each
 *   two consecutive windows. The lower quartile: windows with a prefill step in them are
 *   longer. Two windows together: when the gateway or the engine stalls, the chunks held up
 *   arrive bunched, one long gap then near-zero ones; a window boundary in between leaves
 *   one window long and the next short (the least of the short ones was 10% low on a busy
 *   machine), and the pair holds both.
 * - `leastStepMs`, one engine step with one or two sequences: the same lower quartile, over the
 *   windows in which at most SMALL_BATCH streams decoded (a window's gaps summed over its
 *   length). `stepMs` takes every window, and under a long flood those are all of a full
 *   batch; this one is what no batch size goes under, so the decode guard lets go of a TPOT
 *   limit under it (decode-guard.ts) and admission warns of an objective under it
 *   (tpot-reachable.ts). Undefined until MIN_WINDOWS such windows.
 * - `stepTokens`, the most prompt tokens one step computes (vLLM's max_num_batched_tokens):
 *   `capacity.max_num_batched_tokens`, else the engine's default, raised to the largest step
 *   the engine's iteration-tokens histogram shows (an engine never steps past its budget);
 *   lowered to the histogram's step ceiling when a prompt longer than it was computed alone
 *   there (its prefill needed more than one step, so the budget is at most the ceiling; the
 *   histogram's buckets are powers of two, so this is the budget rounded up to one). Without
 *   such a prompt an engine run with a budget under the default is over-estimated.
 * - `kvCapacityTokens`, `blockSize`: cache_config_info (or `capacity.kv_tokens`).
 * - `maxNumSeqs`: `capacity.max_num_seqs`, else what the engine says of itself (engine-info.ts:
 *   a llama.cpp server's `total_slots`); vLLM does not export it.
 */
import { type AdmissionConfig, configured, type EngineName } from '../config/schema.js'
import { lowQuantile, type Point, quantileSlope } from './quantile-line.js'
import type { BackendLoad } from './types.js'

export type FactSource = 'config' | 'measured' | 'engine_metric' | 'engine_info' | 'default_prior'

export interface Fact {
  readonly value: number
  readonly source: FactSource
}

/** What admission reads of an endpoint's engine facts, and tells them of its requests. */
export interface EngineFactsView {
  prefillTokensPerS(): Fact
  stepMs(): Fact
  stepTokens(): Fact
  /**
   * A streamed request met `tokens` of prompt at the endpoint and had its first token
   * `serverMs` after dispatch; `alone`: no other prompt was pending there or sent after it.
   */
  observePrefill(tokens: number, serverMs: number, alone?: boolean): void
  /** One engine step with a small batch (one or two sequences), measured; undefined until measured. */
  leastStepMs(): Fact | undefined
  /**
   * A window of the endpoint's inter-token gaps closed with this mean, ms, over `gaps` gaps
   * (default 1), with about `streams` streams decoding through it (unknown: undefined).
   */
  observeStepWindow(meanMs: number, gaps?: number, streams?: number): void
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
/** Prefill samples kept (the last requests'). */
const PREFILL_RING = 64
/** A full ring's quantile line is fitted again after this many new samples. */
const REFIT_EVERY = 8
/** The quantile of the prefill samples the rate's line follows. */
const PREFILL_QUANTILE = 0.2
/** Spread of the prompts' lengths (coefficient of variation) above which the slope is fitted. */
const MIN_SPREAD = 0.25
/** Fixed cost of a lone request's first token in steps, when the slope cannot be fitted. */
const FIXED_STEPS = 1.5
/** Window means kept for the step time. */
const RING = 32
/** The quantile of the window means taken as the step time. */
const STEP_QUANTILE = 0.25
/** Windows before the measured step time is trusted. */
const MIN_WINDOWS = 3
/** The most streams a window may have decoded for its mean to count as a small batch's step. */
const SMALL_BATCH = 2
/** The engine's histograms are read once they hold this many requests. */
const MIN_ENGINE_REQUESTS = 5
/** How far the fixed step per request the engine-metric rate takes off may be wrong. */
const FIXED_UNCERTAINTY = 0.25
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

interface PrefillSample extends Point {
  readonly alone: boolean
}

export class EngineFacts implements EngineFactsView {
  private readonly opts: EngineFactsOptions
  // measured prefill: x = tokens, y = ms, the last PREFILL_RING
  private readonly samples: PrefillSample[] = []
  private count = 0
  /** The measured rate of the samples as they are (undefined: to compute; null: none). */
  private rateCache: number | null | undefined = undefined
  /**
   * The quantile line's slope (O(n² log n) to fit), for the lone samples or all of them
   * (`ofLone`): fitted again once the ring has taken REFIT_EVERY new samples, not on
   * each (the rate is read on every arrival; at 64 samples a fit costs about as much as the
   * rest of the request's path).
   */
  private slopeCache: { readonly slope: number | undefined; readonly ofLone: boolean } | undefined = undefined
  private sinceFit = 0
  private readonly windows: StepWindow[] = []
  /** The step time of `windows`, kept until the next window (stepMs() is read on every dispatch). */
  private step: Fact | undefined = undefined
  /** The windows of a small batch (SMALL_BATCH streams at most), and their step time, kept likewise. */
  private readonly smallWindows: StepWindow[] = []
  private leastStep: Fact | undefined = undefined
  private load: BackendLoad | undefined = undefined
  private scrapes = 0
  /** The requests the engine runs at once, by its own word (engine-info.ts). */
  private slots: number | undefined = undefined
  /** The longest prompt computed alone here, and the scrape count when its first token came. */
  private longestLone = { tokens: 0, atScrape: 0 }

  constructor(opts: EngineFactsOptions) {
    this.opts = opts
  }

  /** A scrape landed: what the engine's metrics say. */
  scraped(load: BackendLoad): void {
    this.load = load
    this.scrapes++
  }

  /**
   * One streamed request: `tokens` of prompt it met at the endpoint (pending there at
   * dispatch, its own to compute, sent after it), `serverMs` from dispatch to its first
   * token; `alone` when it met no other prompt.
   */
  observePrefill(tokens: number, serverMs: number, alone = false): void {
    if (!(tokens > 0) || !(serverMs >= 0)) return
    this.samples.push({ x: tokens, y: serverMs, alone })
    if (alone && tokens > this.longestLone.tokens) this.longestLone = { tokens, atScrape: this.scrapes }
    if (this.samples.length > PREFILL_RING) this.samples.shift()
    this.count++
    this.rateCache = undefined
    // until the ring is full every sample refits (the first ones matter most)
    if (++this.sinceFit >= (this.samples.length < PREFILL_RING ? 1 : REFIT_EVERY)) this.slopeCache = undefined
  }

  /** A window of the endpoint's inter-token gaps closed with this mean, ms, over `gaps` gaps. */
  observeStepWindow(meanMs: number, gaps = 1, streams?: number): void {
    if (!(meanMs > 0) || !(gaps > 0)) return
    this.windows.push({ meanMs, gaps })
    if (this.windows.length > RING) this.windows.shift()
    this.rateCache = undefined // the fixed cost of the ratio is in steps
    this.step = undefined
    if (streams !== undefined && streams <= SMALL_BATCH) {
      this.smallWindows.push({ meanMs, gaps })
      if (this.smallWindows.length > RING) this.smallWindows.shift()
      this.leastStep = undefined
    }
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
    this.step ??= { value: stepOf(this.windows), source: 'measured' }
    return this.step
  }

  leastStepMs(): Fact | undefined {
    if (this.smallWindows.length < MIN_WINDOWS) return undefined
    // read by the gate for every endpoint a request is checked against: one object per window
    this.leastStep ??= { value: stepOf(this.smallWindows), source: 'measured' }
    return this.leastStep
  }

  stepTokens(): Fact {
    if (this.opts.stepTokens !== undefined) return { value: this.opts.stepTokens, source: 'config' }
    const prior = DEFAULT_STEP_TOKENS[this.opts.engine]
    const seen = this.load?.largestStepTokens
    if (seen !== undefined && seen > prior) return { value: seen, source: 'engine_metric' }
    // two scrapes after its first token: the histogram holds its prefill's steps
    const ceiling = this.load?.stepCeilingTokens
    const lone = this.longestLone
    if (
      ceiling !== undefined &&
      ceiling < prior &&
      lone.tokens > ceiling &&
      this.scrapes >= lone.atScrape + 2
    )
      return { value: ceiling, source: 'engine_metric' }
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
    if (v !== undefined) return { value: v, source: 'config' }
    return this.slots === undefined ? undefined : { value: this.slots, source: 'engine_info' }
  }

  /** The engine said how many requests it runs at once (engine-info.ts). */
  engineSlots(n: number): void {
    this.slots = n
  }

  /** Tokens/s from the gateway's own samples; undefined when they say nothing plausible. */
  private measuredRate(): number | undefined {
    if (this.rateCache === undefined) this.rateCache = this.fitRate() ?? null
    return this.rateCache ?? undefined
  }

  private fitRate(): number | undefined {
    const lone = this.samples.filter((s) => s.alone)
    const points = lone.length >= MIN_SAMPLES ? lone : this.samples
    const n = points.length
    let sx = 0
    let sxx = 0
    for (const p of points) {
      sx += p.x
      sxx += p.x * p.x
    }
    const mx = sx / n
    const spread = sxx / n - mx * mx > (MIN_SPREAD * mx) ** 2
    const slope = spread ? this.slopeOf(points, points === lone) : undefined
    if (slope !== undefined && slope > 0) return plausible(1000 / slope)
    const fixed = FIXED_STEPS * this.stepMs().value
    const msPerToken = lowQuantile(
      points.map((p) => (p.y - fixed) / p.x),
      PREFILL_QUANTILE,
    )
    return msPerToken === undefined ? undefined : plausible(1000 / msPerToken)
  }

  private slopeOf(points: readonly Point[], ofLone: boolean): number | undefined {
    if (this.slopeCache === undefined || this.slopeCache.ofLone !== ofLone) {
      this.slopeCache = { slope: quantileSlope(points, PREFILL_QUANTILE), ofLone }
      this.sinceFit = 0
    }
    return this.slopeCache.slope
  }

  /** Tokens/s from the engine's prefill-time and prompt-token histograms (vLLM V1). */
  private engineRate(): number | undefined {
    const l = this.load
    if (l?.prefillSecondsSum === undefined || l.prefillCount === undefined || l.promptTokensSum === undefined)
      return undefined
    if (l.prefillCount < MIN_ENGINE_REQUESTS) return undefined
    const computed = l.promptTokensSum - (l.prefixCacheHitsTotal ?? 0)
    const fixedMs = l.prefillCount * this.stepMs().value
    const ms = l.prefillSecondsSum * 1000 - fixedMs
    // what is left once the fixed step per request is taken off must stand clear of the
    // step's own uncertainty (a quarter of it): short prompts' sums are mostly that step (a
    // flood of 5-token prompts read as ~1,000 tokens/s where the engine does 20,000)
    if (computed <= 0 || ms < fixedMs * FIXED_UNCERTAINTY) return undefined
    return plausible((computed / ms) * 1000)
  }

  state(): object {
    const show = (f: Fact | undefined, digits = 0) =>
      f === undefined ? null : { value: round(f.value, digits), source: f.source }
    return {
      prefillTokensPerS: show(this.prefillTokensPerS()),
      stepMs: show(this.stepMs(), 2),
      leastStepMs: show(this.leastStepMs(), 2),
      stepTokens: show(this.stepTokens()),
      kvCapacityTokens: show(this.kvCapacityTokens()),
      blockSize: show(this.blockSize()),
      maxNumSeqs: show(this.maxNumSeqs()),
      prefillSamples: this.count,
      stepWindows: this.windows.length,
    }
  }
}

interface StepWindow {
  readonly meanMs: number
  readonly gaps: number
}

/** The lower quartile of the mean gap of each two consecutive windows (the step time; see the header). */
function stepOf(windows: readonly StepWindow[]): number {
  const pairs: number[] = []
  for (let i = 1; i < windows.length; i++) {
    const a = windows[i - 1] as StepWindow
    const b = windows[i] as StepWindow
    pairs.push((a.meanMs * a.gaps + b.meanMs * b.gaps) / (a.gaps + b.gaps))
  }
  const sorted = pairs.sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) * STEP_QUANTILE)] ?? 0
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
