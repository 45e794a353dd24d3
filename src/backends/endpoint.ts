/**
 * One model server: its undici Pool for requests, its scraper, load state, ledger and
 * breaker. Freshness rules are in load-state.ts: stale (or never scraped) load counts as
 * saturated, so the endpoint takes no request unless the pool fails open.
 *
 * Leaving (discovery removed it): `drain()` stops its scraper and new requests at once,
 * and closes its Pool only after the last lease in flight is released.
 */
import { Client, Pool } from 'undici'
import type { Clock } from '../clock.js'
import { ESTIMATOR_PRIORS, type GatewayConfig, type PoolConfig } from '../config/schema.js'
import { sameFamily, sniffEngine } from './adapters/sniff.js'
import { Breaker } from './breaker.js'
import { EndpointPrefixCache } from './endpoint-prefix-cache.js'
import { EngineFacts, type EstimatorPriorFacts } from './engine-facts.js'
import { readSlots } from './engine-info.js'
import { InFlightBlocks } from './inflight-blocks.js'
import { Ledger, type LedgerEntryHandle } from './ledger.js'
import { capacityOf, correctLoad } from './load-correction.js'
import { FROZEN_GRACE_MIN_MS, LoadState } from './load-state.js'
import type { PromptBlocks } from './prefix-index.js'
import { type ScrapeOutcome, Scraper } from './scraper.js'
import type {
  BackendLoad,
  EffectiveLoad,
  Endpoint,
  EndpointResult,
  EndpointView,
  Lease,
  MetricAdapter,
  PickRequest,
} from './types.js'

export interface BackendsLogger {
  warn(obj: object, msg?: string): void
  info(obj: object, msg?: string): void
}

export interface EndpointDeps {
  readonly clock: Clock
  readonly adapter: MetricAdapter
  readonly pool: PoolConfig
  readonly upstream: GatewayConfig['upstream']
  readonly logger?: BackendsLogger | undefined
  /** Called after every scrape result is applied (the load or its freshness changed). */
  readonly onChange?: (() => void) | undefined
  /** True when another endpoint of the pool can take requests now (a timeout then ejects at once). */
  readonly othersUsable?: ((self: PoolEndpoint) => boolean) | undefined
  /** The estimator's priors (config or default) its engine facts start from. */
  readonly priors?: EstimatorPriorFacts | undefined
}

const PRIORS: EstimatorPriorFacts = {
  stepMs: { value: ESTIMATOR_PRIORS.stepMs, source: 'default_prior' },
  prefillTokensPerS: { value: ESTIMATOR_PRIORS.prefillTokensPerS, source: 'default_prior' },
}

export type EndpointStatus = 'ready' | 'stale' | 'ejected' | 'probing' | 'draining'

class EndpointLease implements Lease {
  private released = false
  constructor(
    readonly endpoint: PoolEndpoint,
    readonly entry: LedgerEntryHandle,
    readonly probe: boolean,
    /** Its prompt's blocks, held in the endpoint's KV cache while it runs (inflight-blocks.ts). */
    readonly blocks: PromptBlocks | undefined,
  ) {}
  release(result: EndpointResult): void {
    if (this.released) return
    this.released = true
    this.endpoint.finish(this, result)
  }
  ended(_ticket: unknown, result: EndpointResult | undefined): void {
    this.release(result ?? 'client_abort')
  }
  /** Its first token: its prompt no longer waits at the server (load-correction.ts). */
  prefilled(): void {
    if (!this.released) this.endpoint.started(this.entry)
  }
}

export class PoolEndpoint implements Endpoint {
  readonly origin: string
  readonly dispatcher: Pool
  readonly headersTimeoutMs: number
  readonly breaker: Breaker
  /** What the gateway sent here recently, as this server's prefix cache is expected to hold it. */
  readonly prefixCache: EndpointPrefixCache
  /** Its engine's facts, learned at run time (engine-facts.ts). */
  readonly facts: EngineFacts
  private readonly ledger = new Ledger()
  /** The prompt blocks the requests in flight here hold (their KV counted once). */
  private readonly inFlight = new InFlightBlocks()
  private readonly scrapeClient: Client
  private readonly scraper: Scraper
  private readonly state: LoadState
  private scrapeStartedAt = 0
  private leaving = false
  private closing: Promise<void> | undefined
  private onDrained: (() => void) | undefined
  private engineHinted = false
  /**
   * The pool's configured capacity in the views' terms (views are made per request: made
   * once here), with the engine's own slot count where the config has none (engine-info.ts).
   */
  private capacity: EndpointView['capacity']
  /** The engine's slot count was asked for since its metrics last came back. */
  private slotsAsked = false

  constructor(
    readonly name: string,
    url: string,
    private readonly deps: EndpointDeps,
  ) {
    this.origin = new URL(url).origin // drops any user:password@ and path
    const up = deps.upstream
    this.headersTimeoutMs = up.headers_timeout_ms
    this.dispatcher = new Pool(this.origin, {
      connections: up.connections_per_endpoint,
      connect: { timeout: up.connect_timeout_ms },
      headersTimeout: up.headers_timeout_ms,
      bodyTimeout: up.body_timeout_ms,
    })
    const scrapeTimeout = deps.pool.scrape_timeout_ms
    this.scrapeClient = new Client(this.origin, {
      connect: { timeout: Math.min(up.connect_timeout_ms, scrapeTimeout) },
      headersTimeout: scrapeTimeout,
      bodyTimeout: scrapeTimeout,
    })
    this.breaker = new Breaker(deps.clock, deps.pool.ejection)
    this.prefixCache = new EndpointPrefixCache(deps.pool.capacity.kv_tokens, {
      blockSize: deps.pool.routing.block_size,
      indexBlocks: deps.pool.routing.index_blocks,
    })
    const cap = deps.pool.capacity
    this.capacity = capacityOf(cap)
    this.facts = new EngineFacts({
      engine: deps.pool.engine,
      ...(deps.priors ?? PRIORS),
      stepTokens: cap.max_num_batched_tokens,
      kvTokens: cap.kv_tokens,
      maxNumSeqs: cap.max_num_seqs,
    })
    const p = deps.pool
    this.state = new LoadState(
      deps.adapter,
      p.stale_after_ms,
      Math.max(FROZEN_GRACE_MIN_MS, 2 * p.scrape_interval_ms),
    )
    this.scraper = new Scraper({
      client: this.scrapeClient,
      path: deps.pool.metrics_path,
      intervalMs: deps.pool.scrape_interval_ms,
      timeoutMs: scrapeTimeout,
      onStart: () => {
        this.scrapeStartedAt = deps.clock.now()
        return this.ledger.beginScrape()
      },
      onResult: (ticket, outcome) => this.applyScrape(ticket, this.scrapeStartedAt, outcome),
    })
  }

  get load(): BackendLoad | undefined {
    return this.state.load
  }

  get loadAt(): number | undefined {
    return this.state.loadAt
  }

  get draining(): boolean {
    return this.leaving
  }

  get inflight(): number {
    return this.ledger.requests
  }

  get inflightTokens(): number {
    return this.ledger.tokens
  }

  /** The last scrape succeeded and was readable. */
  get up(): boolean {
    return this.state.last?.ok === true
  }

  ageMs(now = this.deps.clock.now()): number | undefined {
    return this.state.ageMs(now)
  }

  isFresh(now = this.deps.clock.now()): boolean {
    return this.state.isFresh(now)
  }

  effectiveLoad(): EffectiveLoad {
    const now = this.deps.clock.now()
    return correctLoad({
      load: this.state.load,
      ledger: this.ledger.snapshot(),
      fresh: this.isFresh(now),
      ageMs: this.ageMs(now),
      capacity: this.capacity,
    })
  }

  view(): EndpointView {
    return {
      name: this.name,
      pool: this.deps.pool.name,
      effective: this.effectiveLoad(),
      capacity: this.capacity,
      prefixCache: this.prefixCache,
      facts: this.facts,
    }
  }

  status(): EndpointStatus {
    if (this.leaving) return 'draining'
    const b = this.breaker.state()
    if (b === 'open') return 'ejected'
    if (b === 'half_open') return 'probing'
    return this.isFresh() ? 'ready' : 'stale'
  }

  /**
   * May take a request now: not leaving, the breaker allows, and the load is fresh (or the pool
   * fails open, or the metrics are frozen and nothing is in flight here: one probe at a time).
   */
  usable(): boolean {
    if (this.leaving || !this.breaker.allows()) return false
    return this.deps.pool.fail_open || this.isFresh() || (this.state.frozen && this.ledger.requests === 0)
  }

  /** Milliseconds until this endpoint may be usable again (0 when it is). */
  retryInMs(): number {
    if (this.leaving) return Number.POSITIVE_INFINITY
    const breaker = this.breaker.retryInMs()
    const fresh = this.deps.pool.fail_open || this.isFresh() ? 0 : (this.scraper.msUntilNext() ?? 0)
    return Math.max(breaker, fresh)
  }

  /**
   * Takes a lease (the caller has checked `usable()`) for a request reserving `tokens` of KV
   * cache, less the leading blocks of its prompt that requests in flight here hold already,
   * where the engine caches prefixes (inflight-blocks.ts).
   */
  acquire(tokens: number, request?: PickRequest): Lease {
    const probe = this.breaker.onSend()
    const pc = this.prefixCache
    const blocks = pc.enabled ? request?.blocks : undefined
    const held =
      blocks === undefined ? 0 : this.inFlight.hold(blocks, request?.promptTokens ?? tokens, pc.blockSize)
    return new EndpointLease(this, this.ledger.open(tokens - held, this.deps.clock.now()), probe, blocks)
  }

  /** @internal Called by EndpointLease.prefilled: the request's first token came. */
  started(entry: LedgerEntryHandle): void {
    this.ledger.started(entry)
  }

  /** @internal Called once per lease by EndpointLease.release. */
  finish(lease: EndpointLease, result: EndpointResult): void {
    if (!this.ledger.close(lease.entry)) return
    if (lease.blocks !== undefined) this.inFlight.release(lease.blocks)
    // A server that did not answer in time is wedged for whoever it holds: while the pool
    // has another endpoint to send to, one such timeout is enough to eject it.
    const ejectNow =
      result === 'timeout' &&
      this.deps.pool.ejection.on_first_timeout &&
      this.deps.othersUsable?.(this) === true
    this.breaker.onResult(result, lease.probe, ejectNow)
    if (this.leaving && this.ledger.requests === 0) this.onDrained?.()
  }

  start(): void {
    if (!this.leaving) this.scraper.start()
  }

  /** Stops new requests and scraping; resolves once the last lease is released and the Pool closed. */
  drain(): Promise<void> {
    if (this.closing !== undefined) return this.closing
    this.leaving = true
    this.scraper.stop()
    const idle =
      this.ledger.requests === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            this.onDrained = resolve
          })
    this.closing = idle.then(() => this.closeNow())
    return this.closing
  }

  /** Stops everything; waits for requests the Pool still carries. */
  close(): Promise<void> {
    this.leaving = true
    this.scraper.stop()
    this.onDrained?.()
    this.closing ??= this.closeNow()
    return this.closing
  }

  private async closeNow(): Promise<void> {
    await Promise.allSettled([this.dispatcher.close(), this.scrapeClient.destroy()])
  }

  private applyScrape(ticket: number, sentAt: number, outcome: ScrapeOutcome): void {
    const before = this.state.last
    const verdict = this.state.apply(outcome, sentAt, this.deps.clock.now(), this.ledger)
    const log = { pool: this.deps.pool.name, backend: this.name }
    this.deps.onChange?.()
    if (verdict === 'fresh') {
      this.ledger.applyScrape(ticket)
      if (this.state.load !== undefined) {
        this.prefixCache.scraped(this.state.load, this.deps.pool.capacity.kv_tokens)
        this.facts.scraped(this.state.load)
      }
      this.breaker.onScrapeOk()
      if (before !== undefined && !before.ok) {
        this.deps.logger?.info(log, 'backend metrics back')
        this.slotsAsked = false // a server back from a failure may have restarted with other flags
      }
      this.askSlots()
      return
    }
    if (verdict === 'unreadable' && outcome.ok) this.hintEngine(outcome.body)
    const { failure, detail } = this.state.last ?? {}
    // logged when the failure starts or changes kind, not on every retry
    if (before?.failure !== failure)
      this.deps.logger?.warn({ ...log, failure, detail }, 'backend metrics failing')
  }

  /**
   * The engine's own count of the requests it runs at once (a llama.cpp server's
   * `--parallel`), once it answers, unless `capacity.max_num_seqs` says it: the requests
   * past it then wait in the gateway's queue, where they are predicted, not at the server.
   */
  private askSlots(): void {
    if (this.slotsAsked || this.deps.pool.capacity.max_num_seqs !== undefined) return
    this.slotsAsked = true
    const { engine, scrape_timeout_ms } = this.deps.pool
    void readSlots(this.scrapeClient, engine, scrape_timeout_ms).then((n) => {
      if (n === undefined || this.closing !== undefined || n === this.capacity.maxNumSeqs) return
      this.capacity = { ...this.capacity, maxNumSeqs: n }
      this.facts.engineSlots(n)
      this.deps.logger?.info(
        { pool: this.deps.pool.name, backend: this.name, maxNumSeqs: n },
        `backend runs ${n} requests at once (its /props total_slots): the rest wait in the gateway's queue`,
      )
      this.deps.onChange?.()
    })
  }

  /** Once per endpoint: metrics the pool's adapter cannot read that look like another engine's. */
  private hintEngine(body: string): void {
    if (this.engineHinted) return
    const engine = this.deps.pool.engine
    const looksLike = sniffEngine(body)
    if (looksLike === undefined || sameFamily(looksLike, engine)) return
    this.engineHinted = true
    this.deps.logger?.warn(
      { pool: this.deps.pool.name, backend: this.name, engine, looksLike },
      `endpoint ${this.name}: its ${this.deps.pool.metrics_path} look like ${looksLike}'s, not ${engine}'s; set engine: ${looksLike} (serve --engine ${looksLike} with --upstream)`,
    )
  }

  snapshot(): object {
    const now = this.deps.clock.now()
    return {
      name: this.name,
      origin: this.origin,
      status: this.status(),
      usable: this.usable(),
      load: this.state.load ?? null,
      effectiveLoad: this.effectiveLoad(),
      freshness: {
        fresh: this.isFresh(now),
        ageMs: this.ageMs(now) ?? null,
        staleAfterMs: this.deps.pool.stale_after_ms,
      },
      scrape: {
        up: this.up,
        lastAgoMs: this.state.last === undefined ? null : now - this.state.last.at,
        failure: this.state.last?.failure ?? null,
        detail: this.state.last?.detail ?? null,
        consecutiveFailures: this.scraper.consecutiveFailures,
        nextInMs: this.scraper.msUntilNext() ?? null,
      },
      breaker: this.breaker.snapshot(),
      ledger: this.ledger.snapshot(),
      prefixCache: this.prefixCache.state(),
      engineFacts: this.facts.state(),
      draining: this.leaving,
    }
  }
}
