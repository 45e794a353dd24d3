/**
 * A pool of virtual endpoints behind the gateway's own picker (least-wait scorer), as
 * admission expects a BackendPool to behave (backends/pool.ts), without HTTP or discovery.
 */
import { Picker, usableViews } from '../../backends/picker.js'
import { leastWaitScorer } from '../../backends/scorer.js'
import type { BackendPool, Endpoint, EndpointView, Lease } from '../../backends/types.js'
import type { PoolConfig } from '../../config/schema.js'
import type { VirtualEndpoint } from './virtual-endpoint.js'

export class VirtualPool implements BackendPool {
  readonly name: string
  private readonly picker = new Picker(leastWaitScorer)

  constructor(
    readonly config: PoolConfig,
    readonly replicas: readonly VirtualEndpoint[],
  ) {
    this.name = config.name
  }

  endpoints(): readonly Endpoint[] {
    return this.replicas
  }

  acquire(tokens: number, accept?: (view: EndpointView) => boolean): Lease | undefined {
    return this.picker.acquire(this.replicas, tokens, accept)
  }

  pickView(views: readonly EndpointView[], tokens: number): EndpointView | undefined {
    return views[this.picker.peek(views, tokens)]
  }

  views(): EndpointView[] {
    return usableViews(this.replicas)
  }

  retryAfterMs(): number {
    return this.replicas.some((ep) => ep.usable()) ? 0 : this.config.scrape_interval_ms
  }
}
