/**
 * Stage identify: who sent the request, and which class they asked for.
 *
 * Under `auth.mode: api_key` (the default) the tenant is the one whose `api_keys` hold the
 * SHA-256 of the key in `Authorization: Bearer KEY` (or `x-api-key: KEY`). No key, or an
 * unknown one: the `auth.anonymous` tenant when the config sets one, else 401.
 * The trusted identity header (`x-tenant-id`) is read ONLY under `auth.mode:
 * trusted_header` (an authenticating proxy in front sets it), and then must name a
 * configured tenant; otherwise it is ignored and never lets a caller choose a tenant.
 *
 * The class asked for (`x-priority`, else `service_tier`) must be one the tenant may use:
 * else 403, or the tenant's default class when its `on_disallowed_class` says so. An
 * unknown class is left to admission (a 400 there). The tenant's default class, weight and
 * SLO overrides go on the ticket for admission (classify, the fair queues, the objectives).
 */
import { askedClass } from '../admission/classify.js'
import { GatewayError } from '../errors.js'
import type { GatewayRequest, Stage, StageDeps } from '../gateway-request.js'
import { isRecord } from '../is-record.js'
import type { Tenant, TenantDirectory } from './directory.js'

/** The tenant of every request when nothing else names one (tests that build a Ticket by hand). */
export const DEFAULT_TENANT = 'default'

const BEARER = /^\s*Bearer\s+(\S+)\s*$/i

/** The API key the request carries, if any: `Authorization: Bearer KEY`, else `x-api-key`. */
export function apiKeyOf(headers: GatewayRequest['headers']): string | undefined {
  const auth = headers.authorization
  if (typeof auth === 'string') {
    const m = BEARER.exec(auth)
    if (m !== null) return m[1]
  }
  const key = headers['x-api-key']
  return typeof key === 'string' && key.trim() !== '' ? key.trim() : undefined
}

function whoIs(r: GatewayRequest, dir: TenantDirectory): Tenant | GatewayError {
  r.ticket.keyConsumed = false
  if (dir.auth.mode === 'trusted_header') {
    const header = dir.auth.header
    const id = r.headers[header]
    if (id === undefined && dir.anonymous !== undefined) return dir.anonymous
    const tenant = typeof id === 'string' ? dir.get(id.trim()) : undefined
    return tenant ?? new GatewayError('GW_ERR_UNKNOWN_TENANT', { header })
  }
  const key = apiKeyOf(r.headers)
  const tenant = key === undefined ? undefined : dir.byKey(key)
  // an unknown key gets no more than no key: the anonymous tenant when there is one (the
  // SDKs insist on sending some key, e.g. 'EMPTY', to the demo config)
  if (tenant !== undefined) {
    r.ticket.keyConsumed = true
    return tenant
  }
  if (dir.anonymous !== undefined) return dir.anonymous
  return new GatewayError(key === undefined ? 'GW_ERR_MISSING_API_KEY' : 'GW_ERR_INVALID_API_KEY')
}

export function identifyStage(deps: StageDeps): Stage {
  const dir = deps.tenants
  const known = new Set(Object.keys(deps.classes))
  return (r) => {
    const tenant = whoIs(r, dir)
    if (tenant instanceof GatewayError) return tenant
    const t = r.ticket
    t.tenant = tenant.id
    t.tenantDefaultClass = tenant.defaultClass
    t.tenantWeight = tenant.weight
    t.tenantObjectives = tenant.objectives
    t.tenantAllowedClasses = tenant.allowedClasses
    t.demotable = tenant.allowDemotion || r.headers['x-gateway-allow-demotion'] === 'true'
    const priority = r.headers['x-priority']
    if (typeof priority === 'string') t.requestedClass = priority
    const allowed = tenant.allowedClasses
    if (allowed === undefined) return undefined
    const body = r.kind === 'json' && isRecord(r.received) ? r.received : undefined
    const tier = typeof body?.service_tier === 'string' ? body.service_tier : undefined
    const asked = askedClass(priority, tier)
    if (asked === undefined || allowed.has(asked) || !known.has(asked)) return undefined
    if (tenant.onDisallowedClass === 'default') {
      // the header wins over service_tier in classify: this serves it in the default class
      t.requestedClass = tenant.defaultClass
      return undefined
    }
    return new GatewayError(
      'GW_ERR_CLASS_NOT_ALLOWED',
      { tenant: tenant.id, class: asked, allowed: [...allowed].join(', ') },
      { param: 'x-priority' },
    )
  }
}
