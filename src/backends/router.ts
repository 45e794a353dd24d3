/**
 * Model name -> pool: the exact model name first, then an alias, then the pool that lists
 * `*` (it serves any model no other pool claims). The schema refuses a name claimed twice.
 */
import type { PoolConfig } from '../config/schema.js'
import type { BackendPool } from './types.js'

export class ModelRouter<P extends BackendPool> {
  private readonly exact = new Map<string, P>()
  private readonly alias = new Map<string, P>()
  private readonly wildcard: P | undefined
  private readonly ids: string[]

  constructor(private readonly pools: readonly P[]) {
    let wildcard: P | undefined
    const ids = new Set<string>()
    for (const pool of pools) {
      for (const m of pool.config.models) {
        if (m === '*') wildcard ??= pool
        else if (!this.exact.has(m)) {
          this.exact.set(m, pool)
          ids.add(m)
        }
      }
      for (const a of pool.config.aliases) {
        if (!this.alias.has(a)) this.alias.set(a, pool)
        ids.add(a)
      }
    }
    this.wildcard = wildcard
    this.ids = [...ids]
  }

  /** Undefined model (a request without one): the `*` pool, or the only pool there is. */
  route(model: string | undefined): P | undefined {
    if (model === undefined) return this.wildcard ?? (this.pools.length === 1 ? this.pools[0] : undefined)
    return this.exact.get(model) ?? this.alias.get(model) ?? this.wildcard
  }

  /** Names clients may ask for, in config order (models and aliases; `*` is not a model). */
  modelIds(): string[] {
    return [...this.ids]
  }
}

/**
 * The model name to send upstream for a request that named `requested`: an alias is
 * rewritten to the name the pool's servers serve (`served_model`, else its first model);
 * a model name the pool lists, a name served through `*`, or none, goes as it is.
 */
export function upstreamModel(pool: PoolConfig, requested: string | undefined): string | undefined {
  if (requested === undefined || !pool.aliases.includes(requested)) return requested
  return pool.served_model ?? pool.models.find((m) => m !== '*') ?? requested
}
