/**
 * Stage limits: the tenant's own quotas (requests, tokens, concurrency), before admission
 * spends any capacity on the request. A request over its tenant's quota is refused with
 * 429 here. No tenant has limits yet (the tenants issue fills this in): everything passes.
 */
import type { Stage } from '../gateway-request.js'

export function limitsStage(): Stage {
  return () => undefined
}
