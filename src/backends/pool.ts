/**
 * A pool: the endpoints serving one set of models, and the choice among them.
 *
 * Endpoint names go into metric labels and the `x-gateway-backend` header, so they never
 * carry an address: every endpoint is `<pool>-<n>`, where n is the lowest number no other
 * endpoint of the pool holds (static endpoints get 0, 1, 2... in config order). A name
 * therefore names a slot, like a StatefulSet ordinal: a discovered endpoint that leaves
 * frees its number (once drained) for the next one that comes. Label cardinality stays
 * bounded by the pool's size; /admin/state maps each name to its address.
 */
import type { Clock } from '../clock.js'
import type { GatewayConfig, PoolConfig } from '../config/schema.js'
import { DnsDiscovery, type Resolver } from './discovery.js'
import { type BackendsLogger, PoolEndpoint } from './endpoint.js'
import type { EstimatorPriorFacts } from './engine-facts.js'
import { type Picker, usableViews } from './picker.js'
import type { BackendPool, Endpoint, EndpointView, Lease, MetricAdapter, PickRequest } from './types.js'

export interface PoolDeps {
  readonly clock: Clock
  readonly adapter: MetricAdapter
  readonly upstream: GatewayConfig['upstream']
  readonly picker: Picker
  readonly resolver: Resolver
  readonly logger?: BackendsLogger | undefined
  /** Called after a scrape lands on any endpoint, and when endpoints come or go. */
  readonly onChange?: (() => void) | undefined
  /** The estimator's priors (config or default), for each endpoint's engine facts. */
  readonly priors?: EstimatorPriorFacts | undefined
}

/** Retry-After when a pool has no endpoint at all and nothing better is known. */
const NO_ENDPOINT_RETRY_MS = 1_000

export class EndpointPool implements BackendPool {
  readonly name: string
  private active: PoolEndpoint[] = []
  private readonly leaving = new Set<PoolEndpoint>()
  private readonly discovery: DnsDiscovery | undefined
  private started = false
  private closed = false

  constructor(
    readonly config: PoolConfig,
    private readonly deps: PoolDeps,
  ) {
    this.name = config.name
    if (config.discovery !== undefined) {
      this.discovery = new DnsDiscovery(
        config.discovery,
        deps.resolver,
        (urls) => this.setTargets(urls),
        deps.logger,
        config.name,
      )
    } else {
      this.setTargets(config.endpoints)
    }
  }

  endpoints(): readonly Endpoint[] {
    return this.active
  }

  /** Endpoints that left and still finish requests in flight. */
  drainingEndpoints(): readonly PoolEndpoint[] {
    return [...this.leaving]
  }

  /** Every endpoint object, active first (for metrics and state). */
  allEndpoints(): readonly PoolEndpoint[] {
    return [...this.active, ...this.leaving]
  }

  /** Makes the pool's endpoints exactly `urls` (by origin): new ones start, missing ones drain. */
  setTargets(urls: readonly string[]): void {
    if (this.closed) return
    const wanted = new Map<string, string>()
    for (const u of urls) wanted.set(new URL(u).origin, u)
    const kept: PoolEndpoint[] = []
    for (const ep of this.active) {
      if (wanted.has(ep.origin)) {
        kept.push(ep)
        wanted.delete(ep.origin)
      } else {
        this.leaving.add(ep)
        void ep.drain().then(() => this.leaving.delete(ep))
      }
    }
    for (const url of wanted.values()) {
      const ep = new PoolEndpoint(this.freeName([...kept, ...this.leaving]), url, {
        clock: this.deps.clock,
        adapter: this.deps.adapter,
        pool: this.config,
        upstream: this.deps.upstream,
        logger: this.deps.logger,
        onChange: this.deps.onChange,
        priors: this.deps.priors,
        othersUsable: (self) => this.active.some((other) => other !== self && other.usable()),
      })
      kept.push(ep)
      if (this.started) ep.start()
    }
    this.active = kept
    this.deps.onChange?.()
  }

  acquire(
    tokens: number,
    accept?: (view: EndpointView) => boolean,
    request?: PickRequest,
  ): Lease | undefined {
    return this.deps.picker.acquire(this.active, tokens, accept, request)
  }

  choose(views: readonly EndpointView[], tokens: number, request?: PickRequest): EndpointView | undefined {
    return this.deps.picker.readsPrefix ? this.pickView(views, tokens, request) : undefined
  }

  pickView(views: readonly EndpointView[], tokens: number, request?: PickRequest): EndpointView | undefined {
    return views[this.deps.picker.peek(views, tokens, request)]
  }

  views(): EndpointView[] {
    return usableViews(this.active)
  }

  /** Usable endpoints now. */
  usableCount(): number {
    return this.active.reduce((n, ep) => n + (ep.usable() ? 1 : 0), 0)
  }

  retryAfterMs(): number {
    if (this.active.length === 0) return this.config.discovery?.interval_ms ?? NO_ENDPOINT_RETRY_MS
    let best = Number.POSITIVE_INFINITY
    for (const ep of this.active) {
      if (ep.usable()) return 0
      best = Math.min(best, ep.retryInMs())
    }
    return Number.isFinite(best) ? Math.max(this.config.scrape_interval_ms, best) : NO_ENDPOINT_RETRY_MS
  }

  /** At least one endpoint has fresh load, or the pool fails open and has an endpoint. */
  ready(): boolean {
    return this.active.some((ep) => ep.isFresh()) || (this.config.fail_open && this.active.length > 0)
  }

  start(): void {
    if (this.started || this.closed) return
    this.started = true
    for (const ep of this.active) ep.start()
    this.discovery?.start()
  }

  async close(): Promise<void> {
    this.closed = true
    this.discovery?.stop()
    await Promise.allSettled(this.allEndpoints().map((ep) => ep.close()))
  }

  state(): object {
    return {
      name: this.name,
      engine: this.config.engine,
      models: this.config.models,
      aliases: this.config.aliases,
      failOpen: this.config.fail_open,
      scorer: this.deps.picker.scorerName,
      routing: this.deps.picker.state(),
      discovery: this.discovery?.state() ?? { type: 'static' },
      usable: this.usableCount(),
      retryAfterMs: this.retryAfterMs(),
      endpoints: this.active.map((ep) => ep.snapshot()),
      draining: [...this.leaving].map((ep) => ep.snapshot()),
    }
  }

  private freeName(taken: readonly PoolEndpoint[]): string {
    const names = new Set(taken.map((ep) => ep.name))
    for (let i = 0; ; i++) {
      const name = `${this.name}-${i}`
      if (!names.has(name)) return name
    }
  }
}
