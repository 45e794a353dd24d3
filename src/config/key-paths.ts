/**
 * Every key path the schema accepts, e.g. `backends.pools[].scrape_interval_ms`,
 * `classes.<name>.slo.ttft_ms` and `tenants[].slo.<class>.ttft_ms`. docs/config.md must
 * document each one (a test checks).
 */
import type { z } from 'zod'
import { classSchema, configSchema } from './schema.js'

type Def = { type: string } & Record<string, unknown>

function defOf(schema: unknown): Def {
  return (schema as { _zod: { def: Def } })._zod.def
}

function walk(schema: unknown, prefix: string, out: string[]): void {
  const def = defOf(schema)
  switch (def.type) {
    case 'object':
      for (const [key, child] of Object.entries(def.shape as Record<string, z.ZodType>)) {
        const path = prefix === '' ? key : `${prefix}.${key}`
        out.push(path)
        walk(child, path, out)
      }
      return
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nullable':
      walk(def.innerType, prefix, out)
      return
    case 'pipe':
      walk(def.in, prefix, out)
      return
    case 'array':
      walk(def.element, `${prefix}[]`, out)
      return
    case 'record':
      // keyed by class name (tenants[].slo.<class>): the keys under each entry
      walk(def.valueType, `${prefix}.<class>`, out)
      return
    case 'union':
      for (const option of def.options as unknown[]) walk(option, prefix, out)
      return
    default:
      return
  }
}

export function configKeyPaths(): string[] {
  const out: string[] = []
  walk(configSchema, '', out)
  walk(classSchema, 'classes.<name>', out)
  return [...new Set(out)]
}
