/**
 * The tenants as the identify stage looks them up: by the SHA-256 of an API key, or by id
 * (the trusted identity header, the anonymous tenant). Built once from the config; every
 * lookup is one Map get. Keys are hashed on arrival and only the hash is compared: there
 * is no secret to time (constant-time comparison would protect nothing a hash lookup
 * leaks), and the key itself is never kept or logged.
 */
import { hash } from 'node:crypto'
import { DEFAULT_CLASS } from '../admission/classify.js'
import type { GatewayConfig } from '../config/schema.js'
import type { TenantSloConfig } from '../config/tenant-slo.js'
import type { AuthConfig, TenantConfig } from '../config/tenants.js'
import { type ClassObjectives, type TenantObjectives, tenantObjectives } from '../objectives.js'
import type { TenantLimits } from './limiter.js'

export interface Tenant {
  readonly id: string
  /** The class of a request that asks for none. */
  readonly defaultClass: string
  /** The classes it may ask for; undefined: every class. */
  readonly allowedClasses: ReadonlySet<string> | undefined
  /** A request for a class not allowed: 403, or served in the default class. */
  readonly onDisallowedClass: 'reject' | 'default'
  /** Whether its requests may be demoted to another class instead of refused. */
  readonly allowDemotion: boolean
  /** Its fair share in the admission queues. */
  readonly weight: number
  readonly limits: TenantLimits
  /** Its SLO overrides per class, as configured (tenants[].slo); empty: none. */
  readonly slo: TenantSloConfig
  /** Its objectives per class it overrides, merged over the class's; undefined: none. */
  readonly objectives: TenantObjectives | undefined
}

/** The SHA-256 hex digest of a key: what `api_keys` holds and `slo-gateway hash-key` prints. */
export function hashKey(key: string): string {
  // crypto.hash: one call, no Hash object (a third of createHash's time on a short key)
  return hash('sha256', key, 'hex')
}

const NO_OVERRIDES: TenantSloConfig = Object.freeze({})

function tenantOf(t: TenantConfig, classes: ClassObjectives): Tenant {
  const allowed = t.allowed_classes
  const defaultClass =
    t.default_class ??
    (allowed === undefined || allowed.includes(DEFAULT_CLASS) ? DEFAULT_CLASS : allowed[0]!)
  return {
    id: t.id,
    defaultClass,
    allowedClasses: allowed === undefined ? undefined : new Set(allowed),
    onDisallowedClass: t.on_disallowed_class,
    allowDemotion: t.allow_demotion,
    weight: t.weight,
    limits: t.limits,
    slo: t.slo ?? NO_OVERRIDES,
    objectives: tenantObjectives(t.slo, classes),
  }
}

/** A tenant named only by `auth.anonymous`: the defaults, no limits. */
function implicitTenant(id: string): Tenant {
  return {
    id,
    defaultClass: DEFAULT_CLASS,
    allowedClasses: undefined,
    onDisallowedClass: 'reject',
    allowDemotion: false,
    weight: 1,
    limits: {},
    slo: NO_OVERRIDES,
    objectives: undefined,
  }
}

/** One snapshot of the tenants: replaced whole by a reload, never changed in place. */
interface Snapshot {
  readonly auth: AuthConfig
  readonly anonymous: Tenant | undefined
  readonly byHash: ReadonlyMap<string, Tenant>
  readonly byId: ReadonlyMap<string, Tenant>
}

function snapshot(auth: AuthConfig, tenants: readonly TenantConfig[], classes: ClassObjectives): Snapshot {
  const byHash = new Map<string, Tenant>()
  const byId = new Map<string, Tenant>()
  for (const cfg of tenants) {
    const t = tenantOf(cfg, classes)
    byId.set(t.id, t)
    for (const h of cfg.api_keys) byHash.set(h, t)
  }
  const anon = auth.anonymous
  const anonymous = anon === undefined ? undefined : (byId.get(anon) ?? implicitTenant(anon))
  return { auth, anonymous, byHash, byId }
}

export class TenantDirectory {
  private s: Snapshot

  /** `classes`: the config's, whose objectives the tenants' SLO overrides are merged over. */
  constructor(auth: AuthConfig, tenants: readonly TenantConfig[], classes: ClassObjectives) {
    this.s = snapshot(auth, tenants, classes)
  }

  get auth(): AuthConfig {
    return this.s.auth
  }

  /** The tenant of requests without a key; undefined: they get 401. */
  get anonymous(): Tenant | undefined {
    return this.s.anonymous
  }

  /**
   * Swaps in the tenants of a new config (a reload), all at once: a request identified
   * before keeps the Tenant it was given; every lookup after sees only the new ones.
   */
  replace(config: Pick<GatewayConfig, 'auth' | 'tenants' | 'classes'>): void {
    this.s = snapshot(config.auth, config.tenants, config.classes)
  }

  static fromConfig(config: Pick<GatewayConfig, 'auth' | 'tenants' | 'classes'>): TenantDirectory {
    return new TenantDirectory(config.auth, config.tenants, config.classes)
  }

  /** The tenant a plain API key belongs to. */
  byKey(key: string): Tenant | undefined {
    return this.s.byHash.get(hashKey(key))
  }

  get(id: string): Tenant | undefined {
    return this.s.byId.get(id)
  }

  /** Every configured tenant (and the implicit anonymous one). */
  all(): Tenant[] {
    const { byId, anonymous } = this.s
    const out = [...byId.values()]
    if (anonymous !== undefined && !byId.has(anonymous.id)) out.push(anonymous)
    return out
  }

  /** For /admin/state: ids, classes, weights, limits and SLO overrides; never keys or their hashes. */
  state(): object {
    return {
      mode: this.auth.mode,
      anonymous: this.anonymous?.id ?? null,
      tenants: [...this.s.byId.values()].map((t) => ({
        id: t.id,
        defaultClass: t.defaultClass,
        allowedClasses: t.allowedClasses === undefined ? 'all' : [...t.allowedClasses],
        weight: t.weight,
        limits: t.limits,
        slo: t.slo,
      })),
    }
  }
}
