/**
 * The faces of the backends capability. Implementations live beside this file;
 * the proxy and admission depend on these interfaces only.
 */
import type { Dispatcher } from 'undici'
import type { EngineName, PoolConfig } from '../config/schema.js'
import type { EndpointResult, ExchangeObserver } from '../exchange.js'
import type { EngineFactsView } from './engine-facts.js'
import type { PrefixCacheModel, PromptBlocks } from './prefix-index.js'

export type { EndpointResult }

/** What one model server reports about its load, normalised across engines. */
export interface BackendLoad {
  /** Requests waiting in the engine's own queue. */
  waiting: number
  /** Requests in the running batch. */
  running: number
  /** KV cache usage 0..1, when the engine reports it. */
  kvUsage?: number
  /** KV cache capacity in tokens (blocks x block size), when the engine reports it. */
  kvCapacityTokens?: number
  /** Tokens per KV block (the prefix cache's unit), when the engine reports it. */
  blockSize?: number
  /** Whether the engine caches prompt prefixes, when it says (vLLM's enable_prefix_caching). */
  prefixCaching?: boolean
  /** Monotonic counters, when reported. */
  preemptionsTotal?: number
  prefixCacheQueriesTotal?: number
  prefixCacheHitsTotal?: number
  /** Finished requests' prefill time (scheduled to first token), seconds, summed; and their count. */
  prefillSecondsSum?: number
  prefillCount?: number
  /** The same requests' prompt tokens, summed. */
  promptTokensSum?: number
  /** The most tokens the engine was seen computing in one step (a lower bound of its step budget). */
  largestStepTokens?: number
  /**
   * No step the engine ran computed more tokens than this: the upper edge of the highest
   * finite bucket of its iteration-tokens histogram with a step in it (undefined when a
   * step fell past the last finite bucket, or none was seen).
   */
  stepCeilingTokens?: number
}

/** Which BackendLoad fields an engine's /metrics cannot give (the ledger stands in). */
export type LoadField =
  | 'waiting'
  | 'running'
  | 'kvUsage'
  | 'kvCapacityTokens'
  | 'preemptionsTotal'
  | 'prefixCache'

/**
 * An engine metric adapter. Contract: `parse` never throws; text it cannot read
 * gives `undefined` (the endpoint is then marked stale, which admission treats as
 * saturated unless the pool fails open).
 */
export interface MetricAdapter {
  readonly engine: EngineName
  readonly unsupported: readonly LoadField[]
  parse(text: string): BackendLoad | undefined
}

/** Tokens and requests sent to an endpoint and not yet finished. */
export interface LedgerEntry {
  readonly requests: number
  readonly tokens: number
}

export interface Endpoint {
  /** Stable name for metrics and headers: `<pool>-<n>`, a slot number (see pool.ts); never an address. */
  readonly name: string
  readonly origin: string
  /** One long-lived undici Pool for this origin. */
  readonly dispatcher: Dispatcher
  /** The longest wait for a response's headers here (upstream.headers_timeout_ms); optional for stand-ins. */
  readonly headersTimeoutMs?: number
  /** Latest parsed load and when it was scraped (clock ms), if any. */
  readonly load: BackendLoad | undefined
  readonly loadAt: number | undefined
  /** The load as the gateway believes it is now: last scrape corrected by the ledger. */
  effectiveLoad?(): EffectiveLoad
  /** What the gateway remembers sending here, for its prefix cache (prefix-index.ts); optional for stand-ins. */
  readonly prefixCache?: PrefixCacheModel
  /** Its engine's facts (engine-facts.ts); optional for stand-ins. */
  readonly facts?: EngineFactsView
}

/**
 * The load of one endpoint as the gateway believes it is now: the last scrape corrected
 * by what the gateway sent and saw finish since (formula in load-correction.ts).
 */
export interface EffectiveLoad {
  waiting: number
  running: number
  /** 0..1: scraped usage corrected by the ledger, or ledger tokens / capacity hint; undefined when neither. */
  kvUsage?: number
  kvCapacityTokens?: number
  /** The ledger: requests and tokens sent to this endpoint and not finished. */
  inflightRequests: number
  inflightTokens: number
  /** Scraped data exists, the last scrape succeeded and it is younger than stale_after_ms. */
  fresh: boolean
  /** Age of the scraped data in ms, when there is any. */
  ageMs?: number
}

/** What a scorer sees of one endpoint. */
export interface EndpointView {
  readonly name: string
  readonly pool: string
  readonly effective: EffectiveLoad
  /** Capacity hints from the pool config (max_num_seqs, kv_tokens). */
  readonly capacity: { readonly maxNumSeqs?: number; readonly kvTokens?: number }
  /** The endpoint's prefix cache as the gateway models it (absent for stand-ins). */
  readonly prefixCache?: PrefixCacheModel
  /** Its engine's facts, learned at run time (absent for stand-ins). */
  readonly facts?: EngineFactsView
}

/**
 * What a scorer may know of the request beyond its tokens (all optional: a request that
 * does not generate, or a pool without prefix awareness, has none of it).
 */
export interface PickRequest {
  /** Its prompt's chained block hashes (prefix-index.ts), cut for this pool. */
  readonly blocks?: PromptBlocks | undefined
  /** Its prompt tokens (the estimate), for the share of it an endpoint holds. */
  readonly promptTokens?: number | undefined
  /** Its session (the `x-session-id` header), for session affinity. */
  readonly session?: string | undefined
}

/** The candidates of one pick taken together (the picker computes it once per pick). */
export interface PoolLoad {
  /** Requests in flight (the gateway's ledger) summed over the candidates. */
  readonly inflightRequests: number
  readonly endpoints: number
}

/**
 * Ranks the usable endpoints of a pool for one request (the picker's plugin; admission's
 * estimator may bring its own). Contract: `score` returns a number >= 0 where lower is
 * better (a predicted wait, in any unit as long as it is the same for every endpoint of one
 * call), or Infinity for "do not send here"; it never throws, keeps no reference to the
 * view (`pool`: the candidates' sum, for a scorer that weighs an endpoint against the rest), and is O(1), or O(the prompt's blocks) for a scorer that reads `request.blocks`: it
 * runs on the request path for every candidate. `score` has no side effect (admission asks
 * which endpoint a request would go to before it goes); `picked`, when given, is told each
 * pick that took a lease: the chosen view, the candidates it was chosen among, and the
 * usable endpoints the caller's gate excluded (no headroom), for the scorer's own memory
 * (sessions) and counts.
 */
export interface EndpointScorer {
  readonly name: string
  score(endpoint: EndpointView, tokens: number, request?: PickRequest, pool?: PoolLoad): number
  picked?(
    chosen: EndpointView,
    candidates: readonly EndpointView[],
    excluded: readonly EndpointView[],
    tokens: number,
    request: PickRequest | undefined,
  ): void
  /** True when `score` reads `request.blocks` (admission then predicts by the endpoint it picks). */
  readonly readsPrefix?: boolean
  /** For /admin/state. */
  state?(): object
}

/**
 * A request's hold on an endpoint: released exactly once, however the request ends. It is
 * the backends' observer of the exchange: `ended` releases it (a request that ends without
 * an endpoint result, e.g. the client left before it was sent, counts as `client_abort`).
 */
export interface Lease extends ExchangeObserver {
  readonly endpoint: Endpoint
  /** Report how the request ended; releases the ledger entry. Later calls are no-ops. */
  release(result: EndpointResult): void
  ended(ticket: unknown, result: EndpointResult | undefined): void
}

export interface BackendPool {
  readonly name: string
  readonly config: PoolConfig
  /** Endpoints currently known (static or discovered). */
  endpoints(): readonly Endpoint[]
  /**
   * Choose an endpoint for a request of `tokens` (prompt + expected output) and take a lease
   * on it (ledger + in-flight count). `accept`, when given, must also pass (admission's
   * headroom gate). Undefined when no endpoint is usable now.
   */
  acquire(tokens: number, accept?: (view: EndpointView) => boolean, request?: PickRequest): Lease | undefined
  /**
   * The view `acquire` would choose among `views` now (no lease, no side effect), when the
   * pool's scorer reads prompt prefixes; undefined otherwise (or when none may take it). For
   * admission to predict by the endpoint the request will go to.
   */
  choose?(views: readonly EndpointView[], tokens: number, request?: PickRequest): EndpointView | undefined
  /**
   * The view the picker would choose among `views` now, whatever its scorer (no lease, no
   * side effect): where a request that goes at once goes, for admission's prediction.
   */
  pickView?(views: readonly EndpointView[], tokens: number, request?: PickRequest): EndpointView | undefined
  /** Views of the endpoints usable now (fresh or fail-open, not ejected), for admission. */
  views(): EndpointView[]
  /** Milliseconds until an endpoint may be usable again (for Retry-After), when none is. */
  retryAfterMs(): number
}

export interface Backends {
  /** The pool serving `model` (exact, alias, then `*`), or undefined. */
  route(model: string | undefined): BackendPool | undefined
  pools(): readonly BackendPool[]
  /** Model ids for GET /v1/models. */
  modelIds(): string[]
  /** At least one endpoint has fresh load data (or a pool fails open): for /readyz. */
  ready(): boolean
  start(): void
  close(): Promise<void>
  /** JSON-able snapshot for /admin/state. */
  state(): unknown
}
