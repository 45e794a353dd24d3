/**
 * The backends capability: pools per model, one metric adapter per engine, fresh load
 * state, the in-flight ledger, picking, ejection and discovery. Its face; no logic here.
 */

export { adapterFor, adapterNames } from './adapters/registry.js'
export { type BackendsDeps, type BackendsHandle, createBackends } from './backends.js'
export { Breaker, type BreakerState } from './breaker.js'
export { endpointUrl, type Resolver, systemResolver } from './discovery.js'
export type { BackendsLogger, EndpointStatus, PoolEndpoint } from './endpoint.js'
export { correctLoad } from './load-correction.js'
export type { EndpointPool } from './pool.js'
export { type PromSample, type PromText, parsePromText } from './prom-text.js'
export { upstreamModel } from './router.js'
export { leastWaitScorer } from './scorer.js'
export type {
  BackendLoad,
  BackendPool,
  Backends,
  EffectiveLoad,
  Endpoint,
  EndpointResult,
  EndpointScorer,
  EndpointView,
  Lease,
  LedgerEntry,
  LoadField,
  MetricAdapter,
} from './types.js'
