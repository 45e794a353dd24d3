/**
 * Checks across keys, on typed parts of the config (each part may be missing: it failed
 * its own validation, and the checks that need it are skipped, never the others).
 *
 * - structural: what makes a config ambiguous (a pool name twice, a model served by two
 *   pools, endpoints and discovery both, the two listeners on one port); run by the schema.
 * - run time: what makes a valid config fail at run time (no pool, a pool without servers,
 *   a fallback model no pool serves); run by loadConfig and check-config, so that configs
 *   built in code (tests) may leave the pools empty.
 */
import { nearest } from './suggest.js'

export interface Finding {
  readonly path: (string | number)[]
  readonly message: string
}

interface PoolLike {
  readonly name: string
  readonly models: readonly string[]
  readonly aliases: readonly string[]
  readonly endpoints: readonly string[]
  readonly discovery?: unknown
}

/** A `fallback_model` degrade step: classes.<className>.degrade[index].model. */
export interface FallbackStep {
  readonly className: string
  readonly index: number
  readonly model: string
}

export function structuralFindings(
  server:
    | {
        readonly port: number
        readonly admin_port: number
        readonly probe_port?: number | undefined
        readonly admin_token?: string | undefined
        readonly admin_token_sha256?: string | undefined
      }
    | undefined,
  pools: readonly (PoolLike | undefined)[],
): Finding[] {
  const out: Finding[] = []
  const names = new Set<string>()
  const models = new Map<string, number>()
  pools.forEach((pool, i) => {
    if (pool === undefined) return
    if (names.has(pool.name))
      out.push({ path: ['backends', 'pools', i, 'name'], message: `duplicate pool name '${pool.name}'` })
    names.add(pool.name)
    for (const m of [...pool.models, ...pool.aliases]) {
      const other = models.get(m)
      if (other !== undefined)
        out.push({
          path: ['backends', 'pools', i, 'models'],
          message: `model '${m}' is already served by backends.pools[${other}]`,
        })
      models.set(m, i)
    }
    if (pool.endpoints.length > 0 && pool.discovery !== undefined)
      out.push({
        path: ['backends', 'pools', i, 'discovery'],
        message: 'set either endpoints or discovery, not both',
      })
  })
  if (server !== undefined && server.port !== 0 && server.port === server.admin_port)
    out.push({ path: ['server', 'admin_port'], message: `must differ from server.port (${server.port})` })
  if (server?.probe_port !== undefined && server.probe_port !== 0)
    for (const [key, other] of [
      ['port', server.port],
      ['admin_port', server.admin_port],
    ] as const)
      if (server.probe_port === other)
        out.push({ path: ['server', 'probe_port'], message: `must differ from server.${key} (${other})` })
  if (server?.admin_token !== undefined && server.admin_token_sha256 !== undefined)
    out.push({
      path: ['server', 'admin_token_sha256'],
      message: 'set either admin_token or admin_token_sha256 (its digest), not both',
    })
  return out
}

export interface RunTimeParts {
  /** undefined: a pool that failed validation (the checks that need every pool skip). */
  readonly pools: readonly (PoolLike | undefined)[]
  readonly fallbacks: readonly FallbackStep[]
  /** The models and aliases of every pool as written, when each pool's are readable. */
  readonly served: readonly { readonly name: string; readonly models: readonly string[] }[] | undefined
  readonly simulator: boolean | undefined
}

export function runTimeFindings(parts: RunTimeParts): { errors: Finding[]; notes: Finding[] } {
  const errors: Finding[] = []
  const notes: Finding[] = []
  const { simulator } = parts
  if (parts.pools.length === 0) {
    if (simulator === true)
      notes.push({
        path: ['backends', 'pools'],
        message:
          "none configured: the built-in simulator (simulator.enabled) adds pool 'sim' serving every model",
      })
    else if (simulator === false)
      errors.push({
        path: ['backends', 'pools'],
        message:
          'no pool configured: every request would fail (no_backend); add a pool, or pass --upstream URL, or set simulator.enabled: true',
      })
  }
  parts.pools.forEach((pool, i) => {
    if (pool === undefined || pool.endpoints.length > 0 || pool.discovery !== undefined) return
    if (i === 0 && simulator === true)
      notes.push({
        path: ['backends', 'pools', i],
        message: `pool '${pool.name}' has no endpoints: the built-in simulator's replicas serve it`,
      })
    else if (simulator !== undefined)
      errors.push({
        path: ['backends', 'pools', i],
        message: `pool '${pool.name}' has no servers: set endpoints (a list of http://host:port) or discovery`,
      })
  })
  if (parts.served === undefined) return { errors, notes }
  const named = new Set(parts.served.flatMap((p) => p.models))
  named.delete('*')
  const wildcard = parts.served.find((p) => p.models.includes('*'))
  const wildcardName = wildcard?.name ?? (parts.served.length === 0 && simulator === true ? 'sim' : undefined)
  for (const { className, index, model } of parts.fallbacks) {
    if (named.has(model)) continue
    const path = ['classes', className, 'degrade', index, 'model']
    if (wildcardName !== undefined) {
      notes.push({
        path,
        message: `no pool names model '${model}': it goes to pool '${wildcardName}' (models: ['*']), whose servers must serve it`,
      })
      continue
    }
    const near = nearest(model, [...named])
    const served = [...named].map((m) => `'${m}'`).join(', ')
    errors.push({
      path,
      message: `no pool serves model '${model}'${near === undefined ? '' : `: did you mean '${near}'?`} (the pools serve ${served === '' ? 'nothing' : served})`,
    })
  }
  return { errors, notes }
}
