/**
 * The one typed schema of the gateway's configuration, with named defaults.
 *
 * Keys are snake_case and the paths are the same everywhere: in YAML, in
 * `--set a.b.c=value`, in error messages and in docs/config.md (a test keeps that
 * document in step with this schema). Unknown keys are errors.
 */
import { z } from 'zod'
import { isRecord } from '../is-record.js'
import { structuralFindings } from './checks.js'
import { LIMITS_DEFAULTS, type LimitsConfig, limitsSchema } from './limits.js'
import { routingSchema } from './routing.js'
import { classBoundsFindings, tenantSloBoundsSchema } from './tenant-slo.js'
import { authSchema, tenantFindings, tenantsSchema } from './tenants.js'

const port = z.int().min(0).max(65535)
const positiveInt = z.int().positive()
const nonNegativeInt = z.int().nonnegative()
const httpUrl = z.url({ protocol: /^https?$/ })

export const DEFAULTS = {
  ...LIMITS_DEFAULTS,
  port: 8080,
  adminPort: 9464,
  host: '0.0.0.0',
  /** The admin listener serves /admin/state (upstream URLs, config): loopback unless opened. */
  adminHost: '127.0.0.1',
  bodyLimitBytes: 8 * 1024 * 1024,
  shutdownGraceMs: 30_000,
  clientHeadersTimeoutMs: 10_000,
  clientRequestTimeoutMs: 60_000,
  maxConnections: 16_384,
  shedEventLoopDelayMs: 2_000,
  probeStallMs: 10_000,
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 300_000,
  bodyTimeoutMs: 300_000,
  connectionsPerEndpoint: 256,
  scrapeIntervalMs: 100,
  scrapeTimeoutMs: 1_000,
  staleAfterMs: 1_000,
  ejectionConsecutiveFailures: 3,
  baseEjectionMs: 1_000,
  maxEjectionMs: 30_000,
} as const

const serverSchema = z.strictObject({
  /** Public listener (tenants' traffic). */
  host: z.string().min(1).default(DEFAULTS.host),
  port: port.default(DEFAULTS.port),
  /**
   * Admin listener: /metrics, /healthz, /readyz, /admin/state. Not for tenants; loopback by
   * default (0.0.0.0 lets Prometheus and the kubelet in).
   */
  admin_host: z.string().min(1).default(DEFAULTS.adminHost),
  admin_port: port.default(DEFAULTS.adminPort),
  /**
   * Probe listener (on admin_host): /healthz and /readyz from a thread of their own, so they
   * answer while a flood keeps the event loop behind (src/probe-thread.ts). Unset: none (the
   * admin listener's probes still answer).
   */
  probe_port: port.optional(),
  /** The probe listener fails both probes (503 `stalled`) when the event loop has not turned for this long. */
  probe_stall_ms: positiveInt.default(DEFAULTS.probeStallMs),
  /**
   * When set, every admin route but /healthz, /readyz and the dashboard's page and its
   * static files needs `Authorization: Bearer <admin_token>` (better from the environment:
   * SLO_GATEWAY_ADMIN_TOKEN). At least 16 characters.
   */
  admin_token: z.string().min(16, 'at least 16 characters').optional(),
  /** Largest accepted request body. */
  body_limit_bytes: positiveInt.default(DEFAULTS.bodyLimitBytes),
  /** How long in-flight requests may run after SIGTERM before the process exits anyway. */
  shutdown_grace_ms: nonNegativeInt.default(DEFAULTS.shutdownGraceMs),
  /** A client has this long to send a request's headers (slowloris), else 408 and the connection closes. */
  headers_timeout_ms: positiveInt.default(DEFAULTS.clientHeadersTimeoutMs),
  /** A client has this long to send a whole request, headers and body (a slow body), else 408. */
  request_timeout_ms: positiveInt.default(DEFAULTS.clientRequestTimeoutMs),
  /** Most client connections open at once on the public listener; more are closed on accept. */
  max_connections: positiveInt.default(DEFAULTS.maxConnections),
  /**
   * While the event loop runs this far behind (the process cannot keep up with what arrives),
   * new requests get 503 `overloaded` at once, before their bodies are read. 0: never.
   */
  shed_event_loop_delay_ms: nonNegativeInt.default(DEFAULTS.shedEventLoopDelayMs),
  /**
   * SHA-256 hex of a bearer token the admin listener asks for on /metrics and /admin/state
   * (`slo-gateway hash-key TOKEN` prints it); /healthz and /readyz stay open for probes. Unset: no token.
   */
  admin_token_sha256: z
    .string()
    .regex(
      /^[0-9a-fA-F]{64}$/,
      'expected the SHA-256 hex digest of the token (64 hex characters; `slo-gateway hash-key TOKEN` prints it)',
    )
    .transform((h) => h.toLowerCase())
    .optional(),
})

const logSchema = z.strictObject({
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
})

const upstreamSchema = z.strictObject({
  /** TCP connect timeout to a model server. */
  connect_timeout_ms: positiveInt.default(DEFAULTS.connectTimeoutMs),
  /** Time from sending the request to the response headers (includes the server's own queue). */
  headers_timeout_ms: positiveInt.default(DEFAULTS.headersTimeoutMs),
  /** Longest gap between two body chunks of a response. */
  body_timeout_ms: positiveInt.default(DEFAULTS.bodyTimeoutMs),
  /** Most connections the gateway keeps to one endpoint. */
  connections_per_endpoint: positiveInt.default(DEFAULTS.connectionsPerEndpoint),
})

export const ENGINES = ['vllm', 'vllm-v0', 'sglang', 'tgi', 'llamacpp', 'trtllm'] as const

const dnsDiscoverySchema = z.strictObject({
  type: z.literal('dns'),
  /** Name to resolve (A/AAAA), e.g. a Kubernetes headless Service. */
  name: z.string().min(1),
  port: port,
  scheme: z.enum(['http', 'https']).default('http'),
  interval_ms: positiveInt.default(5_000),
})

export const poolSchema = z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9_.-]+$/, 'pool names are letters, digits, _ . and -'),
  /** Model names this pool serves; `*` serves any model no other pool claims. */
  models: z.array(z.string().min(1)).min(1),
  /** Other names clients may use for this pool's model: rewritten to `served_model` upstream. */
  aliases: z.array(z.string().min(1)).default([]),
  /** The name the pool's servers serve, sent for a request that named an alias; default: the first model. */
  served_model: z.string().min(1).optional(),
  engine: z.enum(ENGINES).default('vllm'),
  endpoints: z.array(httpUrl).default([]),
  discovery: dnsDiscoverySchema.optional(),
  metrics_path: z.string().startsWith('/', "a path, starting with '/'").default('/metrics'),
  scrape_interval_ms: positiveInt.default(DEFAULTS.scrapeIntervalMs),
  scrape_timeout_ms: positiveInt.default(DEFAULTS.scrapeTimeoutMs),
  /** Load data older than this counts as saturated (fail closed) unless fail_open. */
  stale_after_ms: positiveInt.default(DEFAULTS.staleAfterMs),
  fail_open: z.boolean().default(false),
  capacity: z
    .strictObject({
      max_num_seqs: positiveInt.optional(),
      kv_tokens: positiveInt.optional(),
      /** Most tokens one engine step computes (vLLM's max_num_batched_tokens); else learned. */
      max_num_batched_tokens: positiveInt.optional(),
    })
    .prefault({}),
  /** How an endpoint is picked per request (src/config/routing.ts). */
  routing: routingSchema.prefault({}),
  /** Cost of one endpoint per hour, in any currency unit; used for cost per 1K tokens. */
  cost_per_hour: z.number().nonnegative().default(0),
  /**
   * Outlier ejection: this many consecutive failed requests (connect error, 5xx, timeout)
   * eject an endpoint for base_ejection_ms, doubling on each ejection in a row up to
   * max_ejection_ms. After it, one probe request (or a successful scrape) brings it back.
   */
  ejection: z
    .strictObject({
      consecutive_failures: positiveInt.default(DEFAULTS.ejectionConsecutiveFailures),
      /** A timeout ejects at once while another endpoint of the pool can take requests. */
      on_first_timeout: z.boolean().default(true),
      base_ejection_ms: positiveInt.default(DEFAULTS.baseEjectionMs),
      max_ejection_ms: positiveInt.default(DEFAULTS.maxEjectionMs),
    })
    .prefault({}),
})

const backendsSchema = z.strictObject({
  pools: z.array(poolSchema).default([]),
})

const simulatorSchema = z.strictObject({
  /** Start the built-in simulator (on a worker thread of this process) and use it as the pools' endpoints. */
  enabled: z.boolean().default(false),
  profile: z.string().min(1).default('llama-3.1-8b-h100'),
  replicas: positiveInt.max(64).default(2),
  time_scale: z.number().positive().default(1),
  seed: z.int().default(1),
})

const degradeStepSchema = z.discriminatedUnion('action', [
  z.strictObject({ action: z.literal('cap_max_tokens'), max_tokens: positiveInt }),
  z.strictObject({ action: z.literal('fallback_model'), model: z.string().min(1) }),
  z.strictObject({
    action: z.literal('reduce_reasoning'),
    effort: z.enum(['minimal', 'low', 'medium']).default('low'),
  }),
  z.strictObject({ action: z.literal('single_choice') }),
  /**
   * Queue the request in another class (batch by default) instead of refusing it, when its
   * tenant (tenants[].allow_demotion) or the request (x-gateway-allow-demotion: true) allows it.
   */
  z.strictObject({ action: z.literal('demote_to_batch'), class: z.string().min(1).default('batch') }),
])

const sloSchema = z.strictObject({
  /** Time to first token: request received to first content token sent. */
  ttft_ms: positiveInt.optional(),
  /**
   * Length-aware TTFT: a request's TTFT objective is ttft_ms plus this many ms per 1,000
   * prompt tokens, so a long prompt is judged by what its length allows, not refused as long.
   */
  ttft_ms_per_1k_prompt_tokens: z.number().nonnegative().optional(),
  /** Time per output token after the first: (E2E - TTFT) / (tokens - 1). */
  tpot_ms: positiveInt.optional(),
  /** End to end: request received to last byte sent. */
  e2e_ms: positiveInt.optional(),
})

export const classSchema = z.strictObject({
  /** Lower runs first. Between classes: strict priority, above each class's floor (min_share). */
  priority: nonNegativeInt,
  /**
   * The floor: the share (0..1) of the pool's prefill work (prompt tokens dispatched) this
   * class gets while it has requests queued, ahead of the classes above it. Work-conserving:
   * a share unused goes to the others. 0: nothing while a class above has work. The classes'
   * shares sum to at most 1.
   */
  min_share: z.number().min(0).max(1).default(0),
  slo: sloSchema,
  /** The share of offered requests that should be good (SLO attainment's objective; the dashboard draws it). */
  attainment_target: z.number().gt(0).max(1).default(0.99),
  /** Most requests of this class waiting in one pool's queue. */
  queue_limit: positiveInt.default(1_000),
  /** Most request-body bytes of this class waiting in one pool's queue. */
  queue_limit_bytes: positiveInt.default(64 * 1024 * 1024),
  /** Longest a request may wait in the gateway's queue before it is shed (queue_timeout). */
  max_queue_wait_ms: positiveInt.default(30_000),
  /** Dispatch only to an endpoint whose KV usage is below this (0..1). */
  max_kv_usage: z.number().gt(0).max(1),
  /**
   * Dispatch only while the prompt tokens awaiting their first token at the endpoint stay
   * within this share (0..1] of its prefill budget. A model server prefills first come, first
   * served: every batch prompt pending there is prefill an interactive prompt sent after it
   * waits for, so a class below keeps most of the budget free for the classes above. It
   * binds while a class above has requests in flight or queued; a request under its class's
   * floor (min_share) may use the whole budget.
   */
  max_prefill_share: z.number().gt(0).max(1).default(1),
  /** Whether a predicted TTFT miss refuses the request (false: it waits until its own deadline). */
  reject_on_ttft: z.boolean(),
  /** Degrade actions, tried in order before a refusal. */
  degrade: z.array(degradeStepSchema).default([]),
  /** The SLO overrides a tenant may set in this class (tenants[].slo), per objective; none: no override. */
  tenant_slo_bounds: tenantSloBoundsSchema.optional(),
})

export type ClassConfig = z.output<typeof classSchema>
export type DegradeStep = z.output<typeof degradeStepSchema>
/** The steps that change the request itself (body, pool); demotion changes its class, in admission. */
export type BodyDegradeStep = Exclude<DegradeStep, { action: 'demote_to_batch' }>

export const BUILTIN_CLASSES = {
  interactive: {
    priority: 0,
    slo: { ttft_ms: 500, tpot_ms: 50 },
    max_queue_wait_ms: 5_000,
    min_share: 0,
    max_kv_usage: 0.8,
    reject_on_ttft: true,
    degrade: [{ action: 'cap_max_tokens', max_tokens: 512 }, { action: 'demote_to_batch' }],
  },
  batch: {
    priority: 1,
    slo: { e2e_ms: 30 * 60_000 },
    queue_limit: 10_000,
    max_queue_wait_ms: 25 * 60_000,
    min_share: 0.05,
    max_kv_usage: 0.7,
    max_prefill_share: 0.25,
    reject_on_ttft: false,
  },
} as const

function mergeClass(base: Record<string, unknown>, own: Record<string, unknown>): Record<string, unknown> {
  const slo = isRecord(base.slo) && isRecord(own.slo) ? { ...base.slo, ...own.slo } : (own.slo ?? base.slo)
  return { ...base, ...own, slo }
}

const CLASS_NAME = /^[a-z][a-z0-9_-]*$/
export const CLASS_NAME_RULE = 'class names are lower-case letters, digits, _ and -, starting with a letter'

/**
 * The classes: the built-ins always exist; a user entry replaces one by name (merged over
 * it key by key, `slo` included) or adds a class. Each class is checked on its own, so one
 * bad class (or a bad class name) never hides the problems of another.
 */
export function parseClasses(user: Record<string, unknown>): {
  classes: Record<string, ClassConfig>
  issues: z.core.$ZodIssue[]
} {
  const builtins: Record<string, Record<string, unknown>> = BUILTIN_CLASSES
  const classes: Record<string, ClassConfig> = {}
  const issues: z.core.$ZodIssue[] = []
  for (const name of new Set([...Object.keys(builtins), ...Object.keys(user)])) {
    const own = user[name]
    const base = builtins[name]
    const nameOk = CLASS_NAME.test(name)
    if (!nameOk) issues.push({ code: 'custom', path: [name], message: CLASS_NAME_RULE, input: name })
    const raw = base !== undefined && isRecord(own) ? mergeClass(base, own) : (own ?? base)
    const r = classSchema.safeParse(raw, { reportInput: true })
    const bounds = r.success ? classBoundsFindings(r.data) : []
    for (const f of bounds)
      issues.push({ code: 'custom', path: [name, ...f.path], message: f.message, input: raw })
    if (r.success && nameOk && bounds.length === 0) classes[name] = r.data
    else if (!r.success)
      for (const issue of r.error.issues) issues.push({ ...issue, path: [name, ...issue.path] })
  }
  const floors = Object.entries(classes).filter(([, c]) => c.min_share > 0)
  const shares = floors.reduce((sum, [, c]) => sum + c.min_share, 0)
  // a little slack for shares written in decimals (0.7 + 0.2 + 0.1)
  if (shares > 1 + 1e-9) {
    const each = floors.map(([name, c]) => `${name} ${c.min_share}`).join(', ')
    issues.push({
      code: 'custom',
      path: [],
      message: `the classes' min_share sum to ${Math.round(shares * 1000) / 1000} (${each}): expected at most 1; lower them`,
      input: user,
    })
  }
  return { classes, issues }
}

const classesSchema = z
  .record(z.string(), z.unknown())
  .default({})
  .transform((user, ctx) => {
    const { classes, issues } = parseClasses(user)
    for (const issue of issues) ctx.addIssue(issue as never)
    return classes
  })

const admissionSchema = z
  .strictObject({
    /** false: a plain proxy (no queues, no predictions, no refusals for capacity). */
    enabled: z.boolean().default(true),
    /** Admit when predicted TTFT <= SLO x (1 - margin). */
    margin: z.number().min(0).max(0.9).default(0.1),
    /**
     * The share of admitted requests that may miss their TTFT objective: the margin of a
     * class widens (2 points per miss or refusal from the queue, up to 0.5) while more miss,
     * and narrows back to `margin` while fewer do. 0: a fixed margin.
     */
    ttft_miss_target: z.number().min(0).max(0.5).default(0.005),
    /**
     * The same for TPOT: the share of admitted streams that may end above their TPOT
     * objective. The decode guard's limit (TPOT x (1 - margin)) tightens while more do.
     */
    tpot_miss_target: z.number().min(0).max(0.5).default(0.005),
    /**
     * What a class's floor (classes.<name>.min_share) remembers: what it is owed, or took
     * beyond its share, is bounded by its share of the prompt tokens dispatched in this window.
     */
    min_share_window_ms: positiveInt.default(5_000),
    /**
     * TTFT reserve (src/admission/ttft-reserve.ts): a class dispatches only while a prompt of
     * a class above, this quantile of its recent arrivals' sizes, sent right after it, is
     * still predicted within that class's TTFT objective x (1 - margin). 0: off.
     */
    ttft_reserve_quantile: z.number().min(0).max(1).default(0.99),
    /** The reserve of a class holds while that class has had an arrival within this time. */
    ttft_reserve_idle_ms: positiveInt.default(30_000),
    /** Dispatch only to an endpoint with at most this many requests waiting in its own queue. */
    max_server_waiting: nonNegativeInt.default(0),
    /**
     * Prefix routing, past capacity: a request whose home (the endpoint caching its prompt) is
     * closed and cannot serve it within its TTFT objective is refused (`ttft_slo`, Retry-After:
     * when its home reopens) rather than sent where it would compute more than twice what it
     * computes at home (src/admission/cache-hold.ts). false: it goes there and recomputes.
     */
    refuse_recompute: z.boolean().default(true),
    /**
     * Prompt tokens sent to one endpoint and not yet prefilled, at most (always one request).
     * Unset (the default): learned per endpoint, the engine's step budget, at most what it
     * prefills in half the tightest TTFT objective (src/admission/prefill-budget.ts). Set: an
     * override for every endpoint.
     */
    max_prefill_tokens_per_endpoint: positiveInt.optional(),
    /** Dispatch only to an endpoint with fewer requests in flight (else capacity.max_num_seqs when set). */
    max_inflight_per_endpoint: positiveInt.default(256),
    /**
     * Decode guard: a class dispatches to an endpoint only while its streams' inter-token
     * latency, a mean whose weights decay with this time constant, is within the TPOT objective
     * (x (1 - margin)) of that class and every class above it. A few engine steps.
     */
    itl_window_ms: positiveInt.default(200),
    /**
     * Decode guard, for a class below another with a TPOT objective: while a class above has
     * had an arrival within ttft_reserve_idle_ms, the class below gets a TPOT objective of its
     * own, the tightest above x (1 - this), with a margin learned from its own streams, so a
     * flood below cannot hold the steps at the limit that closes the guard of the class above.
     * 0: the classes below share the limit of the classes above.
     */
    decode_headroom_below: z.number().min(0).max(0.9).default(0.3),
    /**
     * A class with nothing admitted for this long gets its next request admitted against a
     * refusing prediction (a probe), so the estimator keeps learning from outcomes.
     */
    probe_interval_ms: positiveInt.default(2_000),
    /** Output tokens reserved for a request that sets no max_tokens. */
    default_max_tokens: positiveInt.default(1024),
    /** Priors of the TTFT estimator, refined online from every finished request. */
    estimator: z
      .strictObject({
        /** One engine step with a small batch, ms. Unset: learned (the default prior until then). */
        step_ms: z.number().positive().optional(),
        /** Prefill throughput of one endpoint, tokens/s. Unset: learned (the default prior until then). */
        prefill_tokens_per_s: z.number().positive().optional(),
        /**
         * Count only the prompt tokens a server must compute: the prompt minus the prefix it
         * is expected to hold in its prefix cache (the gateway's memory of the prompts it sent
         * each endpoint, calibrated against the engine's prefix-cache counters). false: every
         * prompt token counts as computed.
         */
        prefix_cache: z.boolean().default(true),
      })
      .prefault({}),
  })
  .transform(withPriors)

/**
 * Which of the engine facts' keys the operator set (overrides, never replaced by what is
 * learned), on the parsed admission config; a symbol, so it is no config key (a copy made
 * by spreading keeps it; one that lost it learns every fact).
 */
export const CONFIGURED: unique symbol = Symbol('configured engine facts')
/** The estimator's priors until the engines' facts are learned (src/backends/engine-facts.ts). */
export const ESTIMATOR_PRIORS = { stepMs: 15, prefillTokensPerS: 20_000 } as const
/** The fallback budget where nothing is known of an endpoint's engine (vLLM V1's step budget). */
export const DEFAULT_PREFILL_BUDGET = 8192

type Configurable = 'step_ms' | 'prefill_tokens_per_s' | 'max_prefill_tokens_per_endpoint'

function withPriors<
  A extends {
    max_prefill_tokens_per_endpoint?: number | undefined
    estimator: { step_ms?: number | undefined; prefill_tokens_per_s?: number | undefined }
  },
>(a: A) {
  const set = new Set<Configurable>()
  if (a.estimator.step_ms !== undefined) set.add('step_ms')
  if (a.estimator.prefill_tokens_per_s !== undefined) set.add('prefill_tokens_per_s')
  if (a.max_prefill_tokens_per_endpoint !== undefined) set.add('max_prefill_tokens_per_endpoint')
  return {
    ...a,
    max_prefill_tokens_per_endpoint: a.max_prefill_tokens_per_endpoint ?? DEFAULT_PREFILL_BUDGET,
    estimator: {
      ...a.estimator,
      step_ms: a.estimator.step_ms ?? ESTIMATOR_PRIORS.stepMs,
      prefill_tokens_per_s: a.estimator.prefill_tokens_per_s ?? ESTIMATOR_PRIORS.prefillTokensPerS,
    },
    [CONFIGURED]: set as ReadonlySet<Configurable> | undefined,
  }
}

export type AdmissionConfig = z.output<typeof admissionSchema>

/** True when the operator set this engine-fact key (see CONFIGURED). */
export function configured(a: AdmissionConfig, key: Configurable): boolean {
  return a[CONFIGURED]?.has(key) === true
}

const telemetrySchema = z.strictObject({
  /** false: no SLO metrics or windows (process and backend metrics stay); for overhead comparisons. */
  enabled: z.boolean().default(true),
  /** Tenants beyond the top N by traffic are labelled `other` (label-cardinality cap). */
  tenant_label_limit: positiveInt.default(50),
  /** Extra TTFT histogram edges in seconds; every class SLO threshold is always added. */
  ttft_buckets_s: z.array(z.number().positive()).optional(),
  /** One summary line per class logged this often (0 = never). */
  summary_interval_ms: nonNegativeInt.default(60_000),
  /** How often the labelled tenants are re-chosen as the top N by traffic. */
  tenant_label_rebalance_ms: positiveInt.default(60_000),
  /** Cost is split among tenants by their tokens over intervals of this length. */
  cost_interval_ms: positiveInt.default(10_000),
  /** How often the backends' running batches are sampled (batch-size distribution, busy time). */
  backend_sample_interval_ms: positiveInt.default(1_000),
})

export type { LimitsConfig }

export const configSchema = z
  .strictObject({
    classes: classesSchema,
    admission: admissionSchema.prefault({}),
    telemetry: telemetrySchema.prefault({}),
    server: serverSchema.prefault({}),
    log: logSchema.prefault({}),
    upstream: upstreamSchema.prefault({}),
    backends: backendsSchema.prefault({}),
    simulator: simulatorSchema.prefault({}),
    auth: authSchema.prefault({}),
    tenants: tenantsSchema,
    limits: limitsSchema.prefault({}),
  })
  .superRefine((cfg, ctx) => {
    for (const f of structuralFindings(cfg.server, cfg.backends.pools)) ctx.addIssue({ code: 'custom', ...f })
    for (const f of tenantFindings(cfg.tenants, cfg.classes)) ctx.addIssue({ code: 'custom', ...f })
    for (const [name, c] of Object.entries(cfg.classes))
      c.degrade.forEach((step, i) => {
        if (step.action !== 'demote_to_batch' || cfg.classes[step.class] !== undefined) return
        ctx.addIssue({
          code: 'custom',
          path: ['classes', name, 'degrade', i, 'class'],
          message: `unknown class '${step.class}' to demote to (known: ${Object.keys(cfg.classes).join(', ')})`,
        })
      })
  })

export type GatewayConfig = z.output<typeof configSchema>
export type PoolConfig = GatewayConfig['backends']['pools'][number]
export type EngineName = (typeof ENGINES)[number]
