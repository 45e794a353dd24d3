/**
 * Loading: the YAML file, then environment variables, then command-line flags, then
 * validation against the schema. Every problem is collected and reported at once.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseDocument, parse as parseYaml } from 'yaml'
import { isRecord } from '../is-record.js'
import { formatIssues, formatPath } from './format-issues.js'
import { configSchema, type GatewayConfig } from './schema.js'

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

function readYaml(file: string, text: string, problems: string[]): Mutable {
  const doc = parseDocument(text, { prettyErrors: true })
  if (doc.errors.length > 0) {
    for (const e of doc.errors) problems.push(`${file}: ${e.message.split('\n')[0]}`)
    return {}
  }
  const value: unknown = doc.toJS()
  if (value === null || value === undefined) return {}
  if (!isRecord(value)) {
    problems.push(
      `${file}: (root): expected a mapping of sections, got ${Array.isArray(value) ? 'a list' : typeof value}`,
    )
    return {}
  }
  return value
}

export interface LoadedConfig {
  config: GatewayConfig
  file: string
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
  let text: string | undefined
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    problems.push(`${path}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  if (text !== undefined) raw = readYaml(path, text, problems)

  const assign = (source: string, segs: (string | number)[], value: unknown) => {
    try {
      setPath(raw, segs, value)
    } catch {
      problems.push(`${source}: cannot set ${formatPath(segs)}`)
    }
  }
  const envPort = env.SLO_GATEWAY_PORT
  const envAdmin = env.SLO_GATEWAY_ADMIN_PORT
  const envUpstream = env.SLO_GATEWAY_UPSTREAM
  if (envPort) assign('SLO_GATEWAY_PORT', ['server', 'port'], numberOrString(envPort))
  if (envAdmin) assign('SLO_GATEWAY_ADMIN_PORT', ['server', 'admin_port'], numberOrString(envAdmin))
  const upstreams = overrides.upstreams?.length
    ? overrides.upstreams
    : envUpstream
      ? envUpstream.split(/[\s,]+/).filter(Boolean)
      : []
  if (upstreams.length > 0) {
    raw.backends = { pools: [{ name: 'default', models: ['*'], endpoints: [...upstreams] }] }
    // an explicit upstream replaces the embedded simulator
    setPath(raw, ['simulator', 'enabled'], false)
  }
  if (overrides.port !== undefined) assign('--port', ['server', 'port'], overrides.port)
  if (overrides.adminPort !== undefined) assign('--admin-port', ['server', 'admin_port'], overrides.adminPort)
  for (const s of overrides.sets ?? []) {
    const eq = s.indexOf('=')
    if (eq <= 0) {
      problems.push(`--set ${s}: expected path=value`)
      continue
    }
    let segs: (string | number)[]
    try {
      segs = splitPath(s.slice(0, eq))
    } catch {
      problems.push(`--set ${s}: expected a path like a.b.c or a.b[0].c`)
      continue
    }
    assign(`--set ${s}`, segs, parseYaml(s.slice(eq + 1)) ?? null)
  }

  const result = configSchema.safeParse(raw, { reportInput: true })
  if (!result.success) problems.push(...formatIssues(result.error.issues, path))
  if (problems.length > 0 || !result.success) throw new ConfigError(problems)
  return { config: result.data, file: path }
}

function numberOrString(s: string): number | string {
  return /^\d+$/.test(s) ? Number(s) : s
}
