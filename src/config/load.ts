/**
 * Loading: the YAML file, then environment variables, then command-line flags, then
 * validation (validate.ts). Every problem is collected and reported at once, in file
 * order, each named by where its value came from (locate.ts).
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Document, parseDocument, parse as parseYaml } from 'yaml'
import { isRecord } from '../is-record.js'
import { formatPath } from './format-issues.js'
import { type Override, placeProblems } from './locate.js'
import type { GatewayConfig } from './schema.js'
import { validateConfig } from './validate.js'

/** config/gateway.yaml shipped with the package: the embedded default. */
export const DEFAULT_CONFIG_FILE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'config',
  'gateway.yaml',
)

export interface ConfigOverrides {
  port?: number
  adminPort?: number
  /** Replaces the pools with one pool `default` serving any model from these URLs. */
  upstreams?: readonly string[]
  /** The engine of the pool made from `upstreams`. */
  engine?: string
  /** `a.b.c=value` assignments; value is read as YAML (numbers, booleans, lists). */
  sets?: readonly string[]
}

export class ConfigError extends Error {
  readonly problems: readonly string[]
  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

type Mutable = Record<string, unknown>

/** One `--set PATH=VALUE`: the path's segments and the value (YAML), or what is wrong with it. */
export function parseSet(s: string): { path: (string | number)[]; value: unknown } | string {
  const eq = s.indexOf('=')
  if (eq <= 0) return `--set ${s}: expected path=value`
  let path: (string | number)[]
  try {
    path = splitPath(s.slice(0, eq))
  } catch {
    return `--set ${s}: expected a path like a.b.c or a.b[0].c`
  }
  return { path, value: parseYaml(s.slice(eq + 1)) ?? null }
}

/** Splits `backends.pools[0].endpoints` or `backends.pools.0.endpoints` into segments. */
export function splitPath(path: string): (string | number)[] {
  const segs: (string | number)[] = []
  for (const part of path.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part)
    if (m === null || (m[1] === '' && m[2] === '')) throw new Error(`bad path '${path}'`)
    if (m[1] !== '') segs.push(/^\d+$/.test(m[1] ?? '') ? Number(m[1]) : m[1]!)
    for (const idx of (m[2] ?? '').matchAll(/\[(\d+)\]/g)) segs.push(Number(idx[1]))
  }
  return segs
}

export function setPath(root: Mutable, path: readonly (string | number)[], value: unknown): void {
  let node: unknown = root
  for (let i = 0; i < path.length - 1; i++) {
    const seg = path[i]!
    const next = path[i + 1]
    const container = node as Mutable & unknown[]
    let child = (container as Mutable)[seg]
    if (typeof child !== 'object' || child === null) {
      child = typeof next === 'number' ? [] : {}
      ;(container as Mutable)[seg] = child
    }
    node = child
  }
  ;(node as Mutable)[path[path.length - 1]!] = value
}

function readYaml(file: string, text: string, problems: string[]): [Mutable, Document | undefined] {
  const doc = parseDocument(text, { prettyErrors: true })
  if (doc.errors.length > 0) {
    for (const e of doc.errors) problems.push(`${file}: ${e.message.split('\n')[0]}`)
    return [{}, undefined]
  }
  const value: unknown = doc.toJS()
  if (value === null || value === undefined) return [{}, doc]
  if (!isRecord(value)) {
    problems.push(
      `${file}: (root): expected a mapping of sections, got ${Array.isArray(value) ? 'a list' : typeof value}`,
    )
    return [{}, undefined]
  }
  return [value, doc]
}

export interface LoadedConfig {
  config: GatewayConfig
  file: string
  /** `FILE: path: note: ...` lines: worth knowing, not wrong (the simulator adds the pool). */
  notes: readonly string[]
}

/**
 * Builds the effective config. Throws ConfigError listing every problem.
 * `env` is taken as a parameter so tests need not touch process.env.
 */
export function loadConfig(
  file: string | undefined,
  overrides: ConfigOverrides = {},
  env: NodeJS.ProcessEnv = {},
): LoadedConfig {
  const problems: string[] = []
  const path = file ?? env.SLO_GATEWAY_CONFIG ?? DEFAULT_CONFIG_FILE
  let raw: Mutable = {}
  let doc: Document | undefined
  let text: string | undefined
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    problems.push(`${path}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  if (text !== undefined) [raw, doc] = readYaml(path, text, problems)
  // a file that cannot be read says nothing about the rest: stop at its problems
  const readable = problems.length === 0

  const given: Override[] = []
  const assign = (source: string, segs: (string | number)[], value: unknown) => {
    try {
      setPath(raw, segs, value)
      given.push({ at: segs, source })
    } catch {
      problems.push(`${source}: cannot set ${formatPath(segs)}`)
    }
  }
  const envPort = env.SLO_GATEWAY_PORT
  const envAdmin = env.SLO_GATEWAY_ADMIN_PORT
  const envUpstream = env.SLO_GATEWAY_UPSTREAM
  if (envPort) assign(`SLO_GATEWAY_PORT=${envPort}`, ['server', 'port'], numberOrString(envPort))
  if (envAdmin)
    assign(`SLO_GATEWAY_ADMIN_PORT=${envAdmin}`, ['server', 'admin_port'], numberOrString(envAdmin))
  // a Redis password belongs in the environment (a Secret), not in the config file; the
  // source names the variable only, never its value
  const envAdminToken = env.SLO_GATEWAY_ADMIN_TOKEN
  if (envAdminToken) assign('SLO_GATEWAY_ADMIN_TOKEN', ['server', 'admin_token'], envAdminToken)
  const envRedis = env.SLO_GATEWAY_REDIS_URL
  if (envRedis) assign('SLO_GATEWAY_REDIS_URL', ['limits', 'redis', 'url'], envRedis)
  const fromFlag = (overrides.upstreams?.length ?? 0) > 0
  const upstreams = fromFlag
    ? (overrides.upstreams ?? [])
    : envUpstream
      ? envUpstream.split(/[\s,]+/).filter(Boolean)
      : []
  const upstreamSource = (url?: string) =>
    fromFlag ? `--upstream${url === undefined ? '' : ` ${url}`}` : `SLO_GATEWAY_UPSTREAM=${envUpstream}`
  if (upstreams.length > 0) {
    raw.backends = { pools: [{ name: 'default', models: ['*'], endpoints: [...upstreams] }] }
    given.push({ at: ['backends'], source: upstreamSource() })
    for (const [i, u] of upstreams.entries())
      given.push({ at: ['backends', 'pools', 0, 'endpoints', i], source: upstreamSource(u) })
    // an explicit upstream replaces the embedded simulator
    assign(upstreamSource(), ['simulator', 'enabled'], false)
  }
  const engine = overrides.engine ?? env.SLO_GATEWAY_ENGINE
  if (engine) {
    const source = overrides.engine !== undefined ? `--engine ${engine}` : `SLO_GATEWAY_ENGINE=${engine}`
    if (upstreams.length > 0) assign(source, ['backends', 'pools', 0, 'engine'], engine)
    else
      problems.push(
        `${source}: sets the engine of the pool made from --upstream (or SLO_GATEWAY_UPSTREAM); in a config file, set backends.pools[].engine`,
      )
  }
  if (overrides.port !== undefined) assign(`--port ${overrides.port}`, ['server', 'port'], overrides.port)
  if (overrides.adminPort !== undefined)
    assign(`--admin-port ${overrides.adminPort}`, ['server', 'admin_port'], overrides.adminPort)
  for (const s of overrides.sets ?? []) {
    const set = parseSet(s)
    if (typeof set === 'string') problems.push(set)
    else assign(`--set ${s}`, set.path, set.value)
  }
  if (!readable) throw new ConfigError(problems)

  const result = validateConfig(raw)
  problems.push(...placeProblems(result.problems, path, doc, given))
  if (problems.length > 0 || result.config === undefined) throw new ConfigError(problems)
  return { config: result.config, file: path, notes: placeProblems(result.notes, path, doc, given, 'note: ') }
}

function numberOrString(s: string): number | string {
  return /^\d+$/.test(s) ? Number(s) : s
}
