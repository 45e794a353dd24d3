/**
 * createBackends: the pools of the config, their endpoints, scrapers and metrics, behind
 * the Backends interface. Nothing runs until `start()`; `close()` stops every timer and
 * closes every undici Pool.
 */
import type { Registry } from 'prom-client'
import type { Clock } from '../clock.js'
import type { RoutingConfig } from '../config/routing.js'
import type { GatewayConfig } from '../config/schema.js'
import { adapterFor } from './adapters/registry.js'
import { type Resolver, systemResolver } from './discovery.js'
import type { BackendsLogger } from './endpoint.js'
import { priorsFrom } from './engine-facts.js'
import { registerBackendMetrics } from './metrics.js'
import { Picker } from './picker.js'
import { EndpointPool } from './pool.js'
import { PrefixAffinityScorer } from './prefix-affinity.js'
import { ModelRouter } from './router.js'
import { registerRoutingMetrics } from './routing-metrics.js'
import { leastWaitScorer } from './scorer.js'
import type { Backends, EndpointScorer } from './types.js'

export interface BackendsDeps {
  readonly clock: Clock
  /** The gateway's registry: the slo_gateway_backend_* series are registered on it. */
  readonly registry: Registry
  readonly logger?: BackendsLogger
  /** DNS resolver for `discovery: dns` pools (default: every address from the OS resolver). */
  readonly resolver?: Resolver
  /** Ranks endpoints for the picker (default: least-wait, see scorer.ts). */
  readonly scorer?: EndpointScorer
}

/** Backends plus what the gateway's own modules may reach beyond the interface. */
export interface BackendsHandle extends Backends {
  pools(): readonly EndpointPool[]
  /** Replaces the scorer of every pool's picker (a routing plugin, or a test, plugs in here). */
  setScorer(scorer: EndpointScorer): void
  /**
   * Calls `listener` after every scrape that lands (load or freshness changed) and whenever
   * endpoints come or go, e.g. for admission to dispatch what waits. Called often (every
   * endpoint, every scrape interval): keep it cheap. A listener that throws is ignored.
   */
  onChange(listener: () => void): void
}

/** A pool's scorer, by its routing config (one instance per pool: it remembers sessions). */
export function scorerFor(routing: RoutingConfig): EndpointScorer {
  return routing.scorer === 'prefix-affinity' ? new PrefixAffinityScorer(routing) : leastWaitScorer
}

export function createBackends(config: GatewayConfig, deps: BackendsDeps): BackendsHandle {
  const pickers: Picker[] = []
  const listeners: (() => void)[] = []
  const onChange = () => {
    for (const l of listeners) {
      try {
        l()
      } catch {
        // a listener's failure is its own; scraping goes on
      }
    }
  }
  const pools = config.backends.pools.map((poolConfig) => {
    const picker = new Picker(deps.scorer ?? scorerFor(poolConfig.routing))
    pickers.push(picker)
    return new EndpointPool(poolConfig, {
      clock: deps.clock,
      adapter: adapterFor(poolConfig.engine),
      upstream: config.upstream,
      picker,
      resolver: deps.resolver ?? systemResolver,
      logger: deps.logger,
      onChange,
      priors: priorsFrom(config.admission),
    })
  })
  const router = new ModelRouter(pools)
  registerBackendMetrics(deps.registry, deps.clock, () => pools)
  registerRoutingMetrics(deps.registry, () => pools.map((pool, i) => ({ pool, picker: pickers[i]! })))
  let closing: Promise<void> | undefined

  return {
    route: (model) => router.route(model),
    pools: () => pools,
    modelIds: () => router.modelIds(),
    ready: () => pools.some((p) => p.ready()),
    start() {
      if (closing === undefined) for (const p of pools) p.start()
    },
    close() {
      closing ??= Promise.allSettled(pools.map((p) => p.close())).then(() => undefined)
      return closing
    },
    setScorer(scorer) {
      for (const p of pickers) p.setScorer(scorer)
    },
    onChange(listener) {
      listeners.push(listener)
    },
    state: () => ({ pools: pools.map((p) => p.state()) }),
  }
}
