/**
 * Validation in one pass that reports every problem: the schema, then the checks across
 * keys on whatever parts did validate (a bad class or pool never hides the problems of the
 * others), then the run-time checks (what would make a valid-looking config fail once
 * serving: no pool, a pool without servers, a fallback model no pool serves).
 */
import { isRecord } from '../is-record.js'
import { type FallbackStep, type Finding, runTimeFindings, structuralFindings } from './checks.js'
import { describeIssue, formatPath, type Problem } from './format-issues.js'
import { configSchema, type GatewayConfig, type PoolConfig, poolSchema } from './schema.js'
import { tenantFindings, tenantSchema } from './tenants.js'

export interface Validation {
  /** The config, when there is no problem. */
  readonly config: GatewayConfig | undefined
  readonly problems: readonly Problem[]
  /** Worth knowing, not wrong (e.g. the simulator adds the pool). */
  readonly notes: readonly Problem[]
}

const toProblem = (f: Finding): Problem => ({ path: f.path, at: f.path, message: f.message })

function rawPools(raw: Record<string, unknown>): (PoolConfig | undefined)[] {
  if (raw.backends === undefined) return []
  if (!isRecord(raw.backends)) return [undefined]
  const pools = raw.backends.pools
  if (pools === undefined) return []
  if (!Array.isArray(pools)) return [undefined]
  return pools.map((p) => poolSchema.safeParse(p).data)
}

/** The fallback_model steps as written (the built-in classes have none; a user's `degrade` replaces theirs). */
function fallbackSteps(classes: unknown): FallbackStep[] {
  if (!isRecord(classes)) return []
  const out: FallbackStep[] = []
  for (const [className, cls] of Object.entries(classes)) {
    if (!isRecord(cls) || !Array.isArray(cls.degrade)) continue
    cls.degrade.forEach((step: unknown, index) => {
      if (isRecord(step) && step.action === 'fallback_model' && typeof step.model === 'string')
        out.push({ className, index, model: step.model })
    })
  }
  return out
}

const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined

/** Each pool's name and models (aliases too) as written; undefined when one is unreadable. */
function servedModels(raw: Record<string, unknown>): { name: string; models: string[] }[] | undefined {
  const pools = isRecord(raw.backends)
    ? (raw.backends.pools ?? [])
    : raw.backends === undefined
      ? []
      : undefined
  if (!Array.isArray(pools)) return undefined
  const out: { name: string; models: string[] }[] = []
  for (const p of pools) {
    const models = isRecord(p) ? strings(p.models) : undefined
    const aliases = isRecord(p) ? (p.aliases === undefined ? [] : strings(p.aliases)) : undefined
    if (!isRecord(p) || models === undefined || aliases === undefined) return undefined
    out.push({ name: String(p.name), models: [...models, ...aliases] })
  }
  return out
}

export function validateConfig(raw: Record<string, unknown>): Validation {
  const full = configSchema.safeParse(raw, { reportInput: true })
  const problems: Problem[] = full.success ? [] : full.error.issues.flatMap(describeIssue)
  const shape = configSchema.shape
  const pools = rawPools(raw)
  // the schema's own cross checks run only when everything else is valid: run them on the parts
  if (!full.success) {
    problems.push(...structuralFindings(shape.server.safeParse(raw.server).data, pools).map(toProblem))
    const tenants = Array.isArray(raw.tenants) ? raw.tenants.map((t) => tenantSchema.safeParse(t).data) : []
    const classes = shape.classes.safeParse(raw.classes).data
    problems.push(...tenantFindings(tenants, classes).map(toProblem))
  }
  const runTime = runTimeFindings({
    pools,
    fallbacks: fallbackSteps(raw.classes),
    served: servedModels(raw),
    simulator: shape.simulator.safeParse(raw.simulator).data?.enabled,
  })
  problems.push(...runTime.errors.map(toProblem))
  const seen = new Set<string>()
  const unique = problems.filter((p) => {
    const key = `${formatPath(p.path)}\u0000${p.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
  return {
    config: unique.length === 0 && full.success ? full.data : undefined,
    problems: unique,
    notes: runTime.notes.map(toProblem),
  }
}
