/**
 * SLO overrides per tenant, within bounds the operator sets per class.
 *
 * A class opts in by setting `tenant_slo_bounds`: for each objective a tenant may change
 * (`ttft_ms`, `tpot_ms`, `e2e_ms`), the range `{ min, max }` an override must lie in. A
 * tenant then sets `slo: { <class>: { ttft_ms: 300 } }`. A class without bounds for an
 * objective allows no override of it: the operator decides what tenants may change.
 */
import { z } from 'zod'
import type { Finding } from './checks.js'

const positiveInt = z.int().positive()

/** The objectives a class sets and a tenant may override, in the order they are checked. */
export const OBJECTIVE_KEYS = ['ttft_ms', 'tpot_ms', 'e2e_ms'] as const
export type ObjectiveKey = (typeof OBJECTIVE_KEYS)[number]

const boundSchema = z
  .strictObject({
    /** The tightest objective a tenant may set. */
    min: positiveInt,
    /** The loosest objective a tenant may set. */
    max: positiveInt,
  })
  .superRefine((b, ctx) => {
    if (b.min > b.max)
      ctx.addIssue({ code: 'custom', path: ['min'], message: `min (${b.min}) is above max (${b.max})` })
  })

/** classes.<name>.tenant_slo_bounds: the overrides a tenant may set in this class. */
export const tenantSloBoundsSchema = z.strictObject({
  ttft_ms: boundSchema.optional(),
  tpot_ms: boundSchema.optional(),
  e2e_ms: boundSchema.optional(),
})

/** One class's objectives as a tenant overrides them: any of the three, each within its bounds. */
const tenantClassSloSchema = z.strictObject({
  ttft_ms: positiveInt.optional(),
  tpot_ms: positiveInt.optional(),
  e2e_ms: positiveInt.optional(),
})

/** tenants[].slo: per class name, the objectives this tenant's requests of that class have instead. */
export const tenantSloSchema = z.record(z.string(), tenantClassSloSchema)

export type TenantSloBounds = z.output<typeof tenantSloBoundsSchema>
export type TenantSloConfig = z.output<typeof tenantSloSchema>

/** What a class's bounds are checked against: the objectives it sets. */
export interface BoundedClass {
  readonly slo: Readonly<Partial<Record<ObjectiveKey, number | undefined>>>
  readonly tenant_slo_bounds?: TenantSloBounds | undefined
}

/**
 * A class's bounds must be for objectives it sets: an override replaces the class's own
 * objective, and a class without one (batch has no TTFT objective) has nothing to replace.
 * Paths are relative to the class.
 */
export function classBoundsFindings(cls: BoundedClass): Finding[] {
  const out: Finding[] = []
  const bounds = cls.tenant_slo_bounds
  if (bounds === undefined) return out
  for (const key of OBJECTIVE_KEYS) {
    if (bounds[key] !== undefined && cls.slo[key] === undefined)
      out.push({
        path: ['tenant_slo_bounds', key],
        message: `the class sets no slo.${key} for a tenant to override: set slo.${key}, or remove these bounds`,
      })
  }
  return out
}

/**
 * What is wrong with one tenant's overrides (tenants[index].slo): a class that does not
 * exist or that the tenant may not use, an objective its class has no bounds for, a value
 * outside them. `classes` undefined: the classes failed their own validation (skipped).
 */
export function tenantSloFindings(
  slo: TenantSloConfig | undefined,
  index: number,
  allowed: readonly string[] | undefined,
  classes: Readonly<Record<string, BoundedClass>> | undefined,
): Finding[] {
  const out: Finding[] = []
  if (slo === undefined || classes === undefined) return out
  const known = Object.keys(classes).join(', ')
  for (const [name, own] of Object.entries(slo)) {
    const at = (...rest: string[]) => ['tenants', index, 'slo', name, ...rest]
    const cls = classes[name]
    if (cls === undefined) {
      out.push({ path: at(), message: `unknown class '${name}' (known: ${known})` })
      continue
    }
    if (allowed !== undefined && !allowed.includes(name)) {
      out.push({
        path: at(),
        message: `the tenant may not use class '${name}' (allowed_classes: ${allowed.join(', ')}): this override would never apply`,
      })
      continue
    }
    for (const key of OBJECTIVE_KEYS) {
      const value = own[key]
      if (value === undefined) continue
      const bound = cls.tenant_slo_bounds?.[key]
      const where = `classes.${name}.tenant_slo_bounds.${key}`
      if (bound === undefined)
        out.push({
          path: at(key),
          message: `class '${name}' allows no tenant override of ${key} (no ${where}: the operator sets { min, max } there to allow one)`,
        })
      else if (value < bound.min || value > bound.max)
        out.push({
          path: at(key),
          message: `${value} is outside the bounds of class '${name}' (${where}: ${bound.min} to ${bound.max})`,
        })
    }
  }
  return out
}
