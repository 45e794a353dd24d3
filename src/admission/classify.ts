/**
 * Classify: which priority class a request belongs to.
 * Header `x-priority`, else body `service_tier` (`flex` means batch, as in the OpenAI
 * API), else the tenant's default, else `interactive`. An unknown class is a 400: the
 * result is then the error to answer with.
 */
import { GatewayError } from '../errors.js'

export const DEFAULT_CLASS = 'interactive'

/** OpenAI `service_tier` values and the class each means. */
const SERVICE_TIERS: Readonly<Record<string, string>> = {
  flex: 'batch',
  batch: 'batch',
  priority: 'interactive',
}

/** The class the request itself asks for (header, else service_tier), if any; not validated. */
export function askedClass(
  header: string | string[] | undefined,
  serviceTier: string | undefined,
): string | undefined {
  const fromHeader = typeof header === 'string' ? header.trim().toLowerCase() : undefined
  if (fromHeader !== undefined && fromHeader !== '') return fromHeader
  return serviceTier !== undefined ? SERVICE_TIERS[serviceTier] : undefined
}

export function classify(
  header: string | string[] | undefined,
  serviceTier: string | undefined,
  tenantDefault: string | undefined,
  known: ReadonlySet<string>,
): string | GatewayError {
  const name = askedClass(header, serviceTier) ?? tenantDefault ?? DEFAULT_CLASS
  if (!known.has(name)) {
    return new GatewayError(
      'GW_ERR_UNKNOWN_CLASS',
      { class: name.slice(0, 40), known: [...known].join(', ') },
      { param: 'x-priority' },
    )
  }
  return name
}
