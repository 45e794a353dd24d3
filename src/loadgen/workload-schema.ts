/**
 * The workload file of `slo-gateway bench` (config/workloads/*.yaml): who sends what, how
 * often, and by which objectives each request is judged. Unknown keys are errors, as in the
 * gateway's config. Lengths are in tokens; a bare number is a fixed length.
 */
import { z } from 'zod'

const count = z.number().int().positive()
const positive = z.number().positive()
const share = z.number().min(0).max(1)

const fixed = z.strictObject({ dist: z.literal('fixed'), value: count })
const atLeastMin = { message: 'expected a number >= min', path: ['max'] }
const uniform = z
  .strictObject({ dist: z.literal('uniform'), min: count, max: count })
  .refine((u) => u.max >= u.min, atLeastMin)
/** exp(N(ln median, sigma²)), rounded, clamped to [min, max]. */
const lognormal = z
  .strictObject({
    dist: z.literal('lognormal'),
    median: positive,
    sigma: positive,
    min: count.default(1),
    max: count.optional(),
  })
  .refine((l) => l.max === undefined || l.max >= l.min, atLeastMin)
/** One length per line: a number, or an object whose `field` holds it. */
const file = z.strictObject({
  dist: z.literal('file'),
  path: z.string().min(1),
  field: z.string().min(1).optional(),
  /** random: drawn with replacement; sequential: line after line (two files read in step stay paired). */
  order: z.enum(['random', 'sequential']).default('random'),
})
const simple = [fixed, uniform, lognormal, file] as const

const asFixed = (v: unknown) => (typeof v === 'number' ? { dist: 'fixed', value: v } : v)
const weight = { weight: positive.default(1) }
const component = z.preprocess(
  asFixed,
  z.discriminatedUnion('dist', [
    fixed.extend(weight),
    uniform.extend(weight),
    lognormal.extend(weight),
    file.extend(weight),
  ]),
)
const mixture = z.strictObject({ dist: z.literal('mixture'), components: z.array(component).min(1) })

export const lengthSchema = z.preprocess(asFixed, z.discriminatedUnion('dist', [...simple, mixture]))
export type LengthSpec = z.infer<typeof lengthSchema>

const sloSchema = z.strictObject({
  ttft_ms: positive.optional(),
  tpot_ms: positive.optional(),
  e2e_ms: positive.optional(),
})
export type SloSpec = z.infer<typeof sloSchema>

const classSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'expected a name of letters, digits, _ . -'),
  /** Its share of the arrivals (normalised over the classes). */
  share: positive.default(1),
  /** Sent as the `x-priority` header (the gateway's class), e.g. interactive or batch. */
  priority: z.string().min(1).optional(),
  /** Sent as the body's `service_tier` (OpenAI's: "flex" is batch at the gateway). */
  service_tier: z.string().min(1).optional(),
  /** More headers on each request of the class (e.g. x-gateway-allow-demotion). */
  headers: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, 'expected a header name'), z.string()).optional(),
  /** The new text of each request (a turn's new message in a conversation). */
  prompt_tokens: lengthSchema,
  /** max_tokens of each request. */
  output_tokens: lengthSchema,
  /** A system message, the same for every request of the class. */
  system_prompt_tokens: count.optional(),
  /** The first `tokens` of the prompt are the same text for this share of the requests. */
  shared_prefix: z.strictObject({ tokens: count, share: share.default(1) }).optional(),
  /**
   * Growing conversations: each request is the next turn of one, with the history before it.
   * `think_ms`: after each answer, the user reads and types for this long before the next
   * turn may go (none: at the next arrival). `retries`: a turn refused with a Retry-After
   * (429 or 503) is sent again once that time has passed, up to this many times (the `openai`
   * client's default is 2); then, or on any other failure, its conversation ends (default 0).
   */
  conversation: z
    .strictObject({
      turns: lengthSchema,
      think_ms: lengthSchema.optional(),
      retries: z.number().int().min(0).max(10).default(0),
    })
    .optional(),
  /** The objectives a request of the class is judged by (good = succeeded and met each). */
  slo: sloSchema.default({}),
})
export type ClassSpec = z.infer<typeof classSchema>

const tenantSchema = z
  .strictObject({
    name: z.string().min(1),
    /** Sent as `Authorization: Bearer <key>`. */
    api_key: z.string().min(1).optional(),
    /** The environment variable holding the key (keeps it out of the file). */
    api_key_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name')
      .optional(),
    /** Its share of the requests of each class it sends. */
    share: positive.default(1),
    /** The classes it sends (default: all). */
    classes: z.array(z.string()).min(1).optional(),
  })
  .refine((t) => !(t.api_key !== undefined && t.api_key_env !== undefined), {
    message: 'set api_key or api_key_env, not both',
  })
export type TenantSpec = z.infer<typeof tenantSchema>

export const ARRIVAL_PROCESSES = ['poisson', 'gamma'] as const

export const workloadSchema = z
  .strictObject({
    description: z.string().optional(),
    /** The model asked for; default: the first of the target's GET /v1/models. */
    model: z.string().min(1).optional(),
    api: z.enum(['chat', 'completions']).default('chat'),
    seed: z.number().int().min(0).default(1),
    /** Defaults for --rate, --concurrency, --duration, --requests. */
    rate: positive.optional(),
    concurrency: count.optional(),
    duration_s: positive.optional(),
    requests: count.optional(),
    /** Inter-arrival times: exponential (poisson) or gamma with shape = burstiness (CV 1/sqrt(b)). */
    arrival: z
      .strictObject({
        process: z.enum(ARRIVAL_PROCESSES).default('poisson'),
        burstiness: positive.default(1),
      })
      .default({ process: 'poisson', burstiness: 1 }),
    /** vLLM's ignore_eos: generate exactly max_tokens (vLLM, SGLang and the simulator take it). */
    ignore_eos: z.boolean().default(false),
    request_timeout_s: positive.default(300),
    /** After the last arrival, how long requests still running may take before they are cut. */
    drain_timeout_s: positive.default(60),
    tenants: z.array(tenantSchema).default([]),
    classes: z.array(classSchema).min(1),
  })
  .superRefine((w, ctx) => {
    const names = new Map<string, number>()
    w.classes.forEach((c, i) => {
      if (names.has(c.name))
        ctx.addIssue({ code: 'custom', path: ['classes', i, 'name'], message: `duplicate class '${c.name}'` })
      names.set(c.name, i)
      if (c.conversation !== undefined && w.api !== 'chat')
        ctx.addIssue({ code: 'custom', path: ['classes', i, 'conversation'], message: 'needs api: chat' })
    })
    w.tenants.forEach((t, i) => {
      t.classes?.forEach((name, j) => {
        if (!names.has(name))
          ctx.addIssue({
            code: 'custom',
            path: ['tenants', i, 'classes', j],
            message: `no class '${name}' (classes: ${[...names.keys()].join(', ')})`,
          })
      })
    })
    if (w.tenants.length === 0) return
    w.classes.forEach((c, i) => {
      if (!w.tenants.some((t) => t.classes === undefined || t.classes.includes(c.name)))
        ctx.addIssue({ code: 'custom', path: ['classes', i], message: `no tenant sends class '${c.name}'` })
    })
  })
export type Workload = z.infer<typeof workloadSchema>
