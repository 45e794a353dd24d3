/**
 * Degrade actions: ways to make a request cheaper so it can still meet its SLO.
 *
 * Contract: `apply` changes the request in place (body, and for a fallback the pool) and
 * returns true when it changed something; false means "does not apply to this request"
 * (max_tokens already under the cap, n already 1, ...) and the ladder moves on. It never
 * throws and does no I/O: the ladder runs on the request path and re-predicts after each
 * step. The action's name is what `x-gateway-degraded` and the metrics report.
 */
import type { BackendPool } from '../../backends/types.js'
import type { BodyDegradeStep } from '../../config/schema.js'
import type { JsonBody } from '../../openai/request-fields.js'
import type { GenerationApi } from '../../ticket.js'

export interface DegradableRequest {
  body: JsonBody
  /** The generation API (the Responses API names its output limit max_output_tokens). */
  readonly api: GenerationApi | undefined
  /** The pool that will serve the request. */
  pool: BackendPool
  /** Tokens of output reserved in the KV cache (max_tokens, or the default). */
  expectedOutput: number
  /** Parallel samples (`n`). */
  choices: number
}

export interface DegradeContext {
  /** The pool serving a model, for fallbacks. */
  route(model: string): BackendPool | undefined
}

export interface DegradeAction<S extends BodyDegradeStep = BodyDegradeStep> {
  readonly name: S['action']
  apply(req: DegradableRequest, step: S, ctx: DegradeContext): boolean
}
