import { z } from 'zod'

/** How many output tokens a request generates when it does not set `ignore_eos`. */
export type OutputDistribution =
  | { readonly kind: 'fixed'; readonly tokens: number }
  | { readonly kind: 'uniform'; readonly min: number; readonly max: number }
  | { readonly kind: 'lognormal'; readonly median: number; readonly sigma: number; readonly min: number }

/** Step time = base + perPrefillToken·P + perDecodeSeq·D + perContextToken·C, in milliseconds. */
export interface StepTimeModel {
  readonly baseMs: number
  readonly perPrefillTokenMs: number
  readonly perDecodeSeqMs: number
  readonly perContextTokenMs: number
}

export interface EngineLimits {
  readonly blockSize: number
  readonly numGpuBlocks: number
  readonly maxNumSeqs: number
  readonly maxNumBatchedTokens: number
  readonly maxModelLen: number
  readonly enablePrefixCaching: boolean
}

/** A simulated model + GPU: what the engine needs to behave like that server. */
export interface SimProfile {
  readonly name: string
  readonly model: string
  readonly engine: EngineLimits
  readonly stepTime: StepTimeModel
  readonly output: OutputDistribution
}

const positiveInt = z.number().int().positive()
const nonNegative = z.number().nonnegative()

const outputSchema = z.discriminatedUnion('distribution', [
  z.strictObject({ distribution: z.literal('fixed'), tokens: positiveInt }),
  z.strictObject({ distribution: z.literal('uniform'), min: positiveInt, max: positiveInt }),
  z.strictObject({
    distribution: z.literal('lognormal'),
    median: z.number().positive(),
    sigma: nonNegative,
    min: positiveInt.default(1),
  }),
])

/** The YAML shape of config/sim-profiles/*.yaml (snake_case, every key required unless defaulted). */
export const profileFileSchema = z
  .strictObject({
    name: z.string().min(1),
    model: z.string().min(1),
    engine: z.strictObject({
      block_size: positiveInt.default(16),
      num_gpu_blocks: positiveInt,
      max_num_seqs: positiveInt,
      max_num_batched_tokens: positiveInt,
      max_model_len: positiveInt,
      enable_prefix_caching: z.boolean().default(false),
    }),
    step_time: z.strictObject({
      base_ms: nonNegative,
      per_prefill_token_ms: nonNegative,
      per_decode_seq_ms: nonNegative,
      per_context_token_ms: nonNegative,
    }),
    output_tokens: outputSchema,
  })
  .superRefine((p, ctx) => {
    if (p.engine.num_gpu_blocks * p.engine.block_size < p.engine.max_model_len) {
      ctx.addIssue({
        code: 'custom',
        path: ['engine', 'num_gpu_blocks'],
        message: `the KV cache (${p.engine.num_gpu_blocks} blocks x ${p.engine.block_size} tokens) must hold one max_model_len (${p.engine.max_model_len}) sequence, as vLLM checks at startup`,
      })
    }
    if (p.output_tokens.distribution === 'uniform' && p.output_tokens.min > p.output_tokens.max) {
      ctx.addIssue({ code: 'custom', path: ['output_tokens', 'min'], message: 'min must be <= max' })
    }
  })

export type ProfileFile = z.infer<typeof profileFileSchema>

export function profileFromFile(f: ProfileFile): SimProfile {
  const o = f.output_tokens
  const output: OutputDistribution =
    o.distribution === 'fixed'
      ? { kind: 'fixed', tokens: o.tokens }
      : o.distribution === 'uniform'
        ? { kind: 'uniform', min: o.min, max: o.max }
        : { kind: 'lognormal', median: o.median, sigma: o.sigma, min: o.min }
  return {
    name: f.name,
    model: f.model,
    engine: {
      blockSize: f.engine.block_size,
      numGpuBlocks: f.engine.num_gpu_blocks,
      maxNumSeqs: f.engine.max_num_seqs,
      maxNumBatchedTokens: f.engine.max_num_batched_tokens,
      maxModelLen: f.engine.max_model_len,
      enablePrefixCaching: f.engine.enable_prefix_caching,
    },
    stepTime: {
      baseMs: f.step_time.base_ms,
      perPrefillTokenMs: f.step_time.per_prefill_token_ms,
      perDecodeSeqMs: f.step_time.per_decode_seq_ms,
      perContextTokenMs: f.step_time.per_context_token_ms,
    },
    output,
  }
}
