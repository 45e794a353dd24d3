/**
 * DNS discovery: resolves a name (e.g. a Kubernetes headless Service, one A/AAAA record per
 * ready pod) every `interval_ms` and hands the pool the full list of endpoint URLs.
 *
 * A failed lookup keeps the current endpoints (a DNS hiccup must not empty a pool; if the
 * pods are really gone their scrapes fail and they go stale). A successful lookup is the
 * truth: addresses that left are drained by the pool, new ones get an endpoint.
 */
import { lookup } from 'node:dns/promises'
import type { PoolConfig } from '../config/schema.js'
import type { BackendsLogger } from './endpoint.js'

/** Resolves a host name to its addresses. Injectable for tests. */
export type Resolver = (name: string) => Promise<string[]>

/** Every A and AAAA address of `name`, as the OS resolver sees them. */
export const systemResolver: Resolver = async (name) =>
  (await lookup(name, { all: true })).map((a) => a.address)

export type DnsDiscoveryConfig = NonNullable<PoolConfig['discovery']>

export function endpointUrl(address: string, port: number, scheme: string): string {
  const host = address.includes(':') ? `[${address}]` : address
  return `${scheme}://${host}:${port}`
}

export class DnsDiscovery {
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  private lastError: string | undefined
  private lastCount: number | undefined

  constructor(
    private readonly config: DnsDiscoveryConfig,
    private readonly resolver: Resolver,
    private readonly onTargets: (urls: string[]) => void,
    private readonly logger?: BackendsLogger,
    private readonly poolName = '',
  ) {}

  start(): void {
    if (this.timer !== undefined || this.stopped) return
    this.tick()
  }

  stop(): void {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }

  /** One lookup now; applies its result. Never throws. */
  async refresh(): Promise<void> {
    let addresses: string[]
    try {
      addresses = await this.resolver(this.config.name)
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code
      const detail = typeof code === 'string' ? code : 'lookup failed'
      if (detail !== this.lastError) {
        this.logger?.warn(
          { pool: this.poolName, name: this.config.name, detail },
          'dns discovery failed; keeping endpoints',
        )
      }
      this.lastError = detail
      return
    }
    if (this.stopped) return
    this.lastError = undefined
    const urls = [...new Set(addresses)]
      .sort()
      .map((a) => endpointUrl(a, this.config.port, this.config.scheme))
    if (urls.length !== this.lastCount) {
      this.logger?.info(
        { pool: this.poolName, name: this.config.name, endpoints: urls.length },
        'dns discovery',
      )
    }
    this.lastCount = urls.length
    this.onTargets(urls)
  }

  state(): object {
    return {
      type: 'dns',
      name: this.config.name,
      intervalMs: this.config.interval_ms,
      lastError: this.lastError ?? null,
    }
  }

  private tick(): void {
    void this.refresh().finally(() => {
      if (this.stopped) return
      this.timer = setTimeout(() => this.tick(), this.config.interval_ms)
      this.timer.unref()
    })
  }
}
