/**
 * One request as the stages of the request's path see it (the list is in stages.ts),
 * and what a stage is: a function that fills in the ticket and hands the request on,
 * refuses it, or waits.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import type { FastifyBaseLogger as Logger } from 'fastify'
import type { AdmissionControl } from './admission/index.js'
import type { BackendPool, Backends, Lease } from './backends/types.js'
import type { Clock } from './clock.js'
import type { ClassConfig, LimitsConfig } from './config/schema.js'
import type { GatewayError } from './errors.js'
import type { Exchange } from './exchange.js'
import type { JsonBody } from './openai/request-fields.js'
import type { TokenEstimator } from './openai/token-estimator.js'
import type { TenantDirectory } from './tenants/directory.js'
import type { Limiter } from './tenants/limiter.js'
import type { Ticket } from './ticket.js'

/** One request as the stages see it. Each field is set by the stage that knows it. */
export interface GatewayRequest {
  readonly ticket: Ticket
  readonly exchange: Exchange
  readonly method: string
  /** Path and query, as received. */
  readonly url: string
  readonly headers: IncomingHttpHeaders
  /** The client's response. */
  readonly res: ServerResponse
  /**
   * `json`: an OpenAI JSON route, `received` is what the body parser made of the body;
   * `raw`: every other /v1/* route, `received` is the body stream, forwarded unread.
   */
  readonly kind: 'json' | 'raw'
  readonly received: unknown
  /** The JSON body's bytes as received (json routes; forwarded as they are when nothing changed). */
  readonly raw?: Buffer | undefined
  /**
   * The JSON body, once parse has checked it is an object. Later stages may rewrite its
   * top-level fields, each by assigning a new value (never by changing a nested one in place:
   * forward finds what changed by comparing top-level values with `original`).
   */
  body: JsonBody | undefined
  /** A shallow copy of `body` as parsed, before any stage rewrote it (parse). */
  original?: JsonBody | undefined
  /** The pool serving the request (parse). */
  pool: BackendPool | undefined
  /** The endpoint the request was given (admission). */
  lease: Lease | undefined
}

/** Returned by a stage that has ended the exchange itself: nothing more to do. */
export const ENDED = Symbol('ended')

export type StageResult = undefined | GatewayError | typeof ENDED
export type Stage = (r: GatewayRequest) => StageResult | Promise<StageResult>

/** What the stages are built from (once, at start-up). */
export interface StageDeps {
  readonly backends: Backends
  readonly admission: AdmissionControl
  readonly tokens: TokenEstimator
  readonly clock: Clock
  /** Expected output of a request that sets no max_tokens. */
  readonly defaultMaxTokens: number
  /** The classes' objectives (they bound how long forward waits for a response's headers). */
  readonly classes: Readonly<Record<string, ClassConfig>>
  /** The tenants and how a request's tenant is established (identify). */
  readonly tenants: TenantDirectory
  /** The tenants' limiter (limits); undefined: no tenant is limited. */
  readonly limiter?: Limiter | undefined
  /** How the limits stage reserves and leases (the config's `limits`). */
  readonly limits?: LimitsConfig | undefined
  /** For what goes wrong out of any request's sight (a limiter store failing). */
  readonly logger?: Logger | undefined
}
