/**
 * The tenants and how a request's tenant is established (`auth`), as the config names
 * them, and the checks across them (duplicate ids and key hashes, classes that do not
 * exist). API keys are stored as SHA-256 hex digests only (`slo-gateway hash-key KEY`
 * prints one), never as plain keys.
 */
import { z } from 'zod'
import type { Finding } from './checks.js'
import { type BoundedClass, tenantSloFindings, tenantSloSchema } from './tenant-slo.js'

const positiveInt = z.int().positive()

/** Tenant ids are metric labels and log fields: short, and letters, digits, _ . - only. */
export const TENANT_ID = /^[a-zA-Z0-9_.-]{1,64}$/
const TENANT_ID_RULE = 'tenant ids are 1 to 64 letters, digits, _ . and -'
const tenantId = z.string().regex(TENANT_ID, TENANT_ID_RULE)

const SHA256_HEX = /^[0-9a-fA-F]{64}$/
const keyHash = z
  .string()
  .regex(
    SHA256_HEX,
    'expected the SHA-256 hex digest of a key (64 hex characters; `slo-gateway hash-key KEY` prints it), never the key itself',
  )
  .transform((s) => s.toLowerCase())

export const tenantLimitsSchema = z.strictObject({
  /** Requests per minute. */
  rpm: positiveInt.optional(),
  /** Tokens per minute, prompt plus completion. */
  tpm: positiveInt.optional(),
  /** Requests in flight at once. */
  max_concurrent: positiveInt.optional(),
  /** Tokens per UTC day. */
  daily_tokens: positiveInt.optional(),
})

export const tenantSchema = z.strictObject({
  id: tenantId,
  /** SHA-256 hex digests of the tenant's API keys. */
  api_keys: z.array(keyHash).default([]),
  /** The class of a request that asks for none; default: the built-in default (interactive). */
  default_class: z.string().min(1).optional(),
  /** The classes the tenant may ask for; default: every class. */
  allowed_classes: z.array(z.string().min(1)).min(1).optional(),
  /** A request for a class not allowed: `reject` (403) or `default` (served in default_class). */
  on_disallowed_class: z.enum(['reject', 'default']).default('reject'),
  /** Its requests may be demoted (a class's `demote_to_batch` step) instead of refused. */
  allow_demotion: z.boolean().default(false),
  /** Fair share in the admission queues, relative to the other tenants of a class. */
  weight: z.number().positive().max(1_000).default(1),
  limits: tenantLimitsSchema.prefault({}),
  /**
   * Per class, objectives this tenant's requests have instead of the class's own, each
   * within the class's `tenant_slo_bounds` (a class without bounds allows none).
   */
  slo: tenantSloSchema.optional(),
})

export const AUTH_MODES = ['api_key', 'trusted_header'] as const

export const authSchema = z.strictObject({
  /**
   * `api_key`: `Authorization: Bearer KEY` or `x-api-key: KEY`, hashed and looked up.
   * `trusted_header`: the tenant id in `header`, set by an authenticating proxy in front.
   */
  mode: z.enum(AUTH_MODES).default('api_key'),
  /** The identity header honoured under `trusted_header` (and ignored otherwise). */
  header: z
    .string()
    .regex(/^[a-zA-Z0-9-]+$/, 'a header name')
    .transform((s) => s.toLowerCase())
    .default('x-tenant-id'),
  /** The tenant of a request without a key (or header); unset: such requests get 401. */
  anonymous: tenantId.optional(),
})

export const tenantsSchema = z.array(tenantSchema).default([])

export type TenantConfig = z.output<typeof tenantSchema>
export type AuthConfig = z.output<typeof authSchema>

/** The classes as the tenant checks need them: names, objectives and their bounds for tenants. */
export type ClassesForTenants = Readonly<Record<string, BoundedClass>>

/**
 * What makes a tenants section wrong beyond each field: duplicates, unknown classes, SLO
 * overrides the classes do not allow. `classes` undefined: they failed their own
 * validation, and the checks that need them are skipped.
 */
export function tenantFindings(
  tenants: readonly (TenantConfig | undefined)[],
  classes: ClassesForTenants | undefined,
): Finding[] {
  const out: Finding[] = []
  const ids = new Map<string, number>()
  const keys = new Map<string, number>()
  const classNames = classes === undefined ? undefined : new Set(Object.keys(classes))
  const known = classNames === undefined ? '' : [...classNames].join(', ')
  tenants.forEach((t, i) => {
    if (t === undefined) return
    const at = (...rest: (string | number)[]) => ['tenants', i, ...rest]
    const other = ids.get(t.id)
    if (other !== undefined)
      out.push({ path: at('id'), message: `duplicate tenant id '${t.id}' (also tenants[${other}])` })
    else ids.set(t.id, i)
    t.api_keys.forEach((k, j) => {
      const owner = keys.get(k)
      if (owner !== undefined)
        out.push({
          path: at('api_keys', j),
          message: `duplicate key hash (also a key of tenants[${owner}]): a key names one tenant`,
        })
      else keys.set(k, i)
    })
    if (classNames === undefined) return
    if (t.default_class !== undefined && !classNames.has(t.default_class))
      out.push({ path: at('default_class'), message: `unknown class '${t.default_class}' (known: ${known})` })
    t.allowed_classes?.forEach((c, j) => {
      if (!classNames.has(c))
        out.push({ path: at('allowed_classes', j), message: `unknown class '${c}' (known: ${known})` })
    })
    if (
      t.allowed_classes !== undefined &&
      t.default_class !== undefined &&
      classNames.has(t.default_class) &&
      !t.allowed_classes.includes(t.default_class)
    )
      out.push({
        path: at('default_class'),
        message: `default class '${t.default_class}' is not in allowed_classes (${t.allowed_classes.join(', ')})`,
      })
    out.push(...tenantSloFindings(t.slo, i, t.allowed_classes, classes))
  })
  return out
}
