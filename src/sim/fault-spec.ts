import { z } from 'zod'

/**
 * Faults a replica can be told to show; the body of POST /admin/faults, the `--fault` flag and
 * SimOptions.faults. Every field is optional; a POST replaces the whole set (POST {} clears all).
 */
export interface FaultSpec {
  /** Fraction (0..1) of completion requests answered at once with `errorStatus`. */
  readonly errorRate?: number
  /** Status for `errorRate`: 500 (InternalServerError) or 503 (ServiceUnavailableError). Default 500. */
  readonly errorStatus?: 500 | 503
  /** Accept completion requests (read the body) and never answer. */
  readonly hang?: boolean
  /** Every engine step takes this many times longer (1 = normal). */
  readonly slowdown?: number
  /** Accept this many completion requests, then crash when the next one arrives. */
  readonly crashAfter?: number
  /** Crash now. */
  readonly crash?: boolean
  /** /metrics: 'stale' freezes the values at the moment the fault is set, 'failing' answers 500. */
  readonly metrics?: 'ok' | 'stale' | 'failing'
  /** Not ready for this long (from startup, or from the POST): /health and completions answer 503. */
  readonly startupDelayMs?: number
}

export const faultSpecSchema = z.strictObject({
  errorRate: z.number().min(0).max(1).optional(),
  errorStatus: z.union([z.literal(500), z.literal(503)]).optional(),
  hang: z.boolean().optional(),
  slowdown: z.number().positive().max(10_000).optional(),
  crashAfter: z.number().int().nonnegative().optional(),
  crash: z.boolean().optional(),
  metrics: z.enum(['ok', 'stale', 'failing']).optional(),
  startupDelayMs: z.number().int().nonnegative().max(86_400_000).optional(),
})

export type FaultParse =
  | { readonly ok: true; readonly spec: FaultSpec }
  | { readonly ok: false; readonly message: string }

/** Validates untrusted fault JSON (already parsed). Messages name the field and the rule. */
export function parseFaultSpec(raw: unknown): FaultParse {
  const r = faultSpecSchema.safeParse(raw)
  if (r.success) {
    const spec: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(r.data)) if (v !== undefined) spec[k] = v
    return { ok: true, spec: spec as FaultSpec }
  }
  const message = r.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')
  return { ok: false, message }
}
