/**
 * Stage identify: who sent the request, and which class they asked for.
 *
 * For now every request is tenant `default` (tenants, their keys and their default
 * classes come with the tenants issue). The class asked for is read from `x-priority`
 * as data; admission validates it (an unknown class is a 400 there).
 */
import type { Stage } from '../gateway-request.js'

export const DEFAULT_TENANT = 'default'

export function identifyStage(): Stage {
  return (r) => {
    const t = r.ticket
    t.tenant = DEFAULT_TENANT
    const priority = r.headers['x-priority']
    if (typeof priority === 'string') t.requestedClass = priority
    return undefined
  }
}
