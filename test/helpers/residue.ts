/**
 * What a gateway still holds, read from GET /admin/state as an operator would: requests
 * in flight, queued or running per class, each endpoint's in-flight ledger and prefill
 * budget, each limited tenant's concurrency leases (which carry its token reservations), and
 * the leases a fail-open limiter granted from its local share or still owes the shared store
 * a settle for. After a fault has passed and
 * every client has its answer, all of it must be zero; `residue` names what is not.
 */
import { isRecord } from '../../src/is-record.js'
import { sleep } from './upstream.js'

/** Every non-zero holding in an /admin/state document, as `path: value` strings. */
export function residue(state: unknown): string[] {
  const out: string[] = []
  if (!isRecord(state)) return ['state: not an object']
  if (state.inflight !== 0) out.push(`inflight: ${String(state.inflight)}`)
  const backends = isRecord(state.backends) ? state.backends : {}
  for (const pool of arr(backends.pools)) {
    for (const ep of arr(pool.endpoints)) {
      const at = `backends.${String(pool.name)}.${String(ep.name)}`
      const ledger = isRecord(ep.ledger) ? ep.ledger : {}
      if (num(ledger.requests) !== 0) out.push(`${at}.ledger.requests: ${String(ledger.requests)}`)
      if (num(ledger.tokens) !== 0) out.push(`${at}.ledger.tokens: ${String(ledger.tokens)}`)
      const eff = isRecord(ep.effectiveLoad) ? ep.effectiveLoad : {}
      if (num(eff.inflightRequests) !== 0)
        out.push(`${at}.effectiveLoad.inflightRequests: ${String(eff.inflightRequests)}`)
    }
  }
  const admission = isRecord(state.admission) ? state.admission : {}
  for (const pool of arr(admission.pools)) {
    const at = `admission.${String(pool.pool)}`
    const classes = isRecord(pool.classes) ? pool.classes : {}
    for (const [name, c] of Object.entries(classes)) {
      if (!isRecord(c)) continue
      if (num(c.queued) !== 0) out.push(`${at}.${name}.queued: ${String(c.queued)}`)
      if (num(c.inflight) !== 0) out.push(`${at}.${name}.inflight: ${String(c.inflight)}`)
    }
    const prefill = isRecord(pool.prefillingTokens) ? pool.prefillingTokens : {}
    for (const [ep, n] of Object.entries(prefill))
      if (num(n) !== 0) out.push(`${at}.prefillingTokens.${ep}: ${String(n)}`)
  }
  const tenants = isRecord(state.tenants) ? state.tenants : {}
  const usage = isRecord(tenants.usage) ? tenants.usage : {}
  for (const [id, u] of Object.entries(usage)) {
    if (!isRecord(u)) continue
    // a lease carries its request's token reservation: no lease, no reservation outstanding
    if (num(u.concurrent) !== 0) out.push(`tenants.${id}.concurrent: ${String(u.concurrent)}`)
    // the store could not say (Redis down): nothing known to be released
    if (u.error !== undefined) out.push(`tenants.${id}.error: ${String(u.error)}`)
  }
  const limiter = isRecord(tenants.limiter) ? tenants.limiter : {}
  if (num(limiter.localLeases) !== 0) out.push(`tenants.limiter.localLeases: ${String(limiter.localLeases)}`)
  // settles the shared store has not taken: leases and reservations it still holds
  if (num(limiter.pendingSettles) !== 0)
    out.push(`tenants.limiter.pendingSettles: ${String(limiter.pendingSettles)}`)
  return out
}

function arr(v: unknown): Record<string, unknown>[] {
  return Array.isArray(v) ? v.filter(isRecord) : []
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : 0
}

/** GET /admin/state until nothing is held (or `timeoutMs`); returns what is still held. */
export async function settledResidue(
  adminUrl: string,
  headers: Record<string, string> = {},
  timeoutMs = 15_000,
): Promise<string[]> {
  const until = Date.now() + timeoutMs
  let left: string[] = []
  for (;;) {
    const res = await fetch(`${adminUrl}/admin/state`, { headers })
    left = residue(await res.json())
    if (left.length === 0 || Date.now() > until) return left
    await sleep(100)
  }
}
