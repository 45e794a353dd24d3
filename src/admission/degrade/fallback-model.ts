import { upstreamModel } from '../../backends/index.js'
import type { DegradeAction } from './types.js'

/** Sends the request to another model's pool (e.g. a smaller model); the response names the model that served. */
export const fallbackModel: DegradeAction<{ action: 'fallback_model'; model: string }> = {
  name: 'fallback_model',
  apply(req, step, ctx) {
    if (req.body.model === step.model) return false
    const pool = ctx.route(step.model)
    if (pool === undefined || pool === req.pool) return false
    req.body.model = upstreamModel(pool.config, step.model)
    req.pool = pool
    return true
  },
}
