/**
 * One request on its way through the gateway. The stages fill it in, in order:
 * identify -> parse -> limits -> admission -> queue -> dispatch -> forward -> account.
 * No stage reaches back into an earlier one; each only adds what it learned.
 * Times are milliseconds on the gateway's clock (performance.now() by default).
 */

export type Outcome =
  | 'pending'
  | 'ok' // upstream answered 2xx and the response was relayed whole
  | 'upstream_error' // upstream answered 4xx/5xx (relayed as is)
  | 'rejected' // refused by the gateway before forwarding (capacity, quota, draining)
  | 'invalid' // bad input (4xx produced by the gateway)
  | 'failed' // transport failure: unreachable, reset, timeout, broken stream
  | 'cancelled' // the client went away first

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
  class = 'interactive'
  model: string | undefined = undefined
  /** The model the upstream was asked for (differs after a fallback). */
  servedModel: string | undefined = undefined
  stream = false
  /** Whether the client itself asked for usage in the stream. */
  clientWantsUsage = false
  promptTokens = 0
  maxTokens: number | undefined = undefined
  /** Degrade actions taken, in order. */
  degraded: string[] = []

  pool: string | undefined = undefined
  backend: string | undefined = undefined
  predictedTtftMs: number | undefined = undefined
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
  /**
   * Called once when the request's prefill is known done: its first content token (streamed)
   * or the end of its response (not streamed). Admission counts prefill work at the servers.
   */
  onPrefilled: (() => void) | undefined = undefined
  /** Called with each gap between consecutive content chunks (admission measures live ITL). */
  onToken: ((gapMs: number, now: number) => void) | undefined = undefined
  /** GW_ERR_* code or reject reason, when there was one. */
  errorCode: string | undefined = undefined

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
