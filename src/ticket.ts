/**
 * One request on its way through the gateway: a plain record, data only. The stages
 * (src/stages.ts) fill it in, in order: identify -> parse -> limits -> admission (queue,
 * dispatch) -> forward; what happens after dispatch is recorded by the request's
 * Exchange (src/exchange.ts), which also tells the observers; account reads it at the end.
 * No stage reaches back into an earlier one; each only adds what it learned.
 * Times are milliseconds on the gateway's clock (performance.now() by default).
 */

import type { Objectives, TenantObjectives } from './objectives.js'
import type { LimitState } from './tenants/limiter.js'
import type { LimiterLease } from './tenants/limits.js'

export type Outcome =
  | 'pending'
  | 'ok' // upstream answered 2xx and the response was relayed whole
  | 'upstream_error' // upstream answered 4xx/5xx (relayed as is)
  | 'rejected' // refused by the gateway before forwarding (capacity, quota, draining)
  | 'invalid' // bad input (4xx produced by the gateway)
  | 'failed' // transport failure: unreachable, reset, timeout, broken stream
  | 'cancelled' // the client went away first

/** nginx's status for a request the client closed before the answer (logs and metrics only). */
export const CLIENT_CLOSED = 499

export type GenerationApi = 'chat' | 'completions' | 'responses'

export interface Usage {
  promptTokens: number
  completionTokens: number
}

export class Ticket {
  /** Gateway request id (also sent as x-request-id when the client did not). */
  readonly id: string
  readonly arrivedAt: number
  readonly method: string
  readonly path: string
  /** The matched route pattern (bounded, for metric labels), e.g. `/v1/*`. */
  route = ''

  tenant = 'default'
  /** The tenant's default class (identify), used by classify when the request asks for none. */
  tenantDefaultClass: string | undefined = undefined
  /** The tenant's fair-share weight in the admission queues (identify). */
  tenantWeight = 1
  /** The classes its tenant may use (identify); undefined: every class. */
  tenantAllowedClasses: ReadonlySet<string> | undefined = undefined
  /** May be demoted to another class instead of refused (its tenant's allow_demotion, or x-gateway-allow-demotion: true). */
  demotable = false
  /** The tenant's objectives per class it overrides (identify); undefined: it overrides none. */
  tenantObjectives: TenantObjectives | undefined = undefined
  /** The request's API key named its tenant: it is the gateway's credential, not forwarded upstream. */
  keyConsumed = false
  /** What the tenant limiter holds for this request; set once admitted by it (tenants/limits.ts). */
  limiterLease: LimiterLease | undefined = undefined
  /** The tenant's requests and tokens limits after this request's charge (x-ratelimit-* headers). */
  rateRequests: LimitState | undefined = undefined
  rateTokens: LimitState | undefined = undefined
  /** The class the client asked for (`x-priority`), before admission validates it. */
  requestedClass: string | undefined = undefined
  /** The client's session (`x-session-id`, at most 256 characters), for session affinity. */
  sessionId: string | undefined = undefined
  /** `service_tier` from the body, as sent. */
  serviceTier: string | undefined = undefined
  class = 'interactive'
  /**
   * The request's objectives, decided with its class (admission, src/objectives.ts): the
   * class's `slo`, or its tenant's override of it. Read through `objectivesOf`, which
   * also answers for a request admission did not judge (undefined here).
   */
  slo: Objectives | undefined = undefined
  /** A generation request (chat, completions or responses): admission applies. */
  generation = false
  /** Which generation API: its body and stream events differ. */
  api: GenerationApi | undefined = undefined
  model: string | undefined = undefined
  /** The model the upstream was asked for (differs after a fallback). */
  servedModel: string | undefined = undefined
  stream = false
  /** Whether the client itself asked for usage in the stream. */
  clientWantsUsage = false
  /** The prompt's size at the edge (characters, chat messages) and its estimate in tokens. */
  promptChars = 0
  promptMessages = 0
  promptTokens = 0
  maxTokens: number | undefined = undefined
  /** Output tokens the request is expected to take: max_tokens, else the configured default. */
  expectedOutputTokens = 0
  /** The gateway asked the upstream for a usage chunk the client did not ask for (removed again). */
  usageAdded = false
  /** Degrade actions taken, in order. */
  degraded: string[] = []

  /** Name of the backend pool serving the request. */
  poolName: string | undefined = undefined
  backend: string | undefined = undefined
  predictedTtftMs: number | undefined = undefined
  /** Time spent in the gateway's admission queue (0 when dispatched at once). */
  queuedMs: number | undefined = undefined
  dispatchedAt: number | undefined = undefined
  responseStartedAt: number | undefined = undefined
  firstTokenAt: number | undefined = undefined
  lastTokenAt: number | undefined = undefined
  finishedAt: number | undefined = undefined
  /** Content-bearing SSE chunks relayed. */
  contentChunks = 0
  /** Gaps between consecutive content chunks (ms), streamed requests only. */
  itlMs: number[] = []
  /** Bytes of the request body as received. */
  bodyBytes = 0
  finishReason: string | undefined = undefined
  usage: Usage | undefined = undefined
  status = 0
  outcome: Outcome = 'pending'
  /** GW_ERR_* code or reject reason, when there was one. */
  errorCode: string | undefined = undefined
  /** Its place among the pipeline's requests in flight (src/slot-map.ts). */
  slot = -1

  constructor(id: string, method: string, path: string, arrivedAt: number) {
    this.id = id
    this.method = method
    this.path = path
    this.arrivedAt = arrivedAt
  }

  get ttftMs(): number | undefined {
    return this.firstTokenAt === undefined ? undefined : this.firstTokenAt - this.arrivedAt
  }

  get e2eMs(): number | undefined {
    return this.finishedAt === undefined ? undefined : this.finishedAt - this.arrivedAt
  }
}
