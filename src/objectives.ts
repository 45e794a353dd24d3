/**
 * A request's objectives (TTFT, TPOT, E2E): decided in one place, read from one place.
 *
 * They are its class's `slo`, or, when its tenant overrides that class's objectives
 * (tenants[].slo, within classes.<name>.tenant_slo_bounds), the class's merged with the
 * override. Admission decides them with the class (`objectivesFor`) and puts them on the
 * ticket (`Ticket.slo`); what judges or bounds a request by its objectives (admission's
 * TTFT budget and wait budget, the verdict, the wait for response headers) reads them
 * with `objectivesOf`. Objectives that depend on the request itself (its length) belong
 * in `objectivesFor` too.
 *
 * Hot path: no allocation. A tenant's merged objectives are built once, with the tenant
 * directory; a request of a tenant without an override shares its class's object.
 */
import type { ClassConfig } from './config/schema.js'
import type { TenantSloConfig } from './config/tenant-slo.js'
import type { Ticket } from './ticket.js'

/** The objectives of a class, or of one request. */
export type Objectives = ClassConfig['slo']

/** A tenant's objectives per class it overrides: the class's, merged with the override. */
export type TenantObjectives = Readonly<Record<string, Objectives>>

/** What objectives are read from: a class's own. */
export type ClassObjectives = Readonly<Record<string, { readonly slo: Objectives }>>

/**
 * A tenant's objectives per class, built once: for each class it overrides, the class's
 * objectives with the override on top. Undefined when it overrides none (its requests
 * then share their class's objects). A class the config does not have is skipped (the
 * config's validation refuses such an override).
 */
export function tenantObjectives(
  overrides: TenantSloConfig | undefined,
  classes: ClassObjectives,
): TenantObjectives | undefined {
  if (overrides === undefined) return undefined
  const out: Record<string, Objectives> = {}
  for (const [name, own] of Object.entries(overrides)) {
    const cls = classes[name]
    if (cls === undefined) continue
    const merged: Record<string, number | undefined> = { ...cls.slo }
    for (const [key, value] of Object.entries(own)) if (value !== undefined) merged[key] = value
    out[name] = Object.freeze(merged as Objectives)
  }
  return Object.keys(out).length === 0 ? undefined : Object.freeze(out)
}

/**
 * The objectives of request `t` in class `className` (of config `cls`): its tenant's for
 * it, else the class's; with `ttft_ms_per_1k_prompt_tokens` set, its TTFT objective grows
 * with its prompt (`ttft_ms + per_1k × prompt tokens / 1000`: one small object per such
 * request; none otherwise).
 */
export function objectivesFor(t: Ticket, className: string, cls: { readonly slo: Objectives }): Objectives {
  const base = t.tenantObjectives?.[className] ?? cls.slo
  const per1k = base.ttft_ms_per_1k_prompt_tokens
  if (per1k === undefined || per1k === 0 || base.ttft_ms === undefined) return base
  return { ...base, ttft_ms: lengthAwareTtftMs(base.ttft_ms, per1k, t.promptTokens) }
}

/** The TTFT objective of a prompt of `promptTokens` tokens: `ttftMs` plus `per1k` ms per 1,000 of them. */
export function lengthAwareTtftMs(ttftMs: number, per1k: number, promptTokens: number): number {
  return Math.round(ttftMs + (per1k * Math.max(0, promptTokens)) / 1000)
}

/**
 * Under a length-aware TTFT objective, the objective of an empty prompt (a request's own
 * less its allowance for `promptTokens`); undefined for an objective that is not length-aware.
 */
export function emptyPromptTtftMs(objectives: Objectives, promptTokens: number): number | undefined {
  const slo = objectives.ttft_ms
  const per1k = objectives.ttft_ms_per_1k_prompt_tokens
  if (slo === undefined || per1k === undefined || per1k === 0) return undefined
  return slo - (per1k * Math.max(0, promptTokens)) / 1000
}

/**
 * The objectives request `t` is held to: those admission decided; for a request admission
 * did not judge (not a generation request, or admission off), those of its class now.
 * Undefined for a class the config does not have.
 */
export function objectivesOf(t: Ticket, classes: ClassObjectives): Objectives | undefined {
  if (t.slo !== undefined) return t.slo
  const cls = classes[t.class]
  return cls === undefined ? undefined : objectivesFor(t, t.class, cls)
}
