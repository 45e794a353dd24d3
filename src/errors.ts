/**
 * Every error the gateway returns to a client, defined once.
 *
 * Each entry has a stable `GW_ERR_*` code, the HTTP status, the OpenAI error `type`
 * (so the official SDKs map it to the right exception class), a message template and a
 * retry hint. docs/errors.md documents the table; test/unit/errors.test.ts keeps the two
 * in step. Nothing internal (stack, cause message, upstream address) is ever sent: the
 * cause is kept on the error for logs only.
 */

import type { Outcome } from './ticket.js'

export type OpenAIErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'service_unavailable_error'
  | 'timeout_error'

export interface ErrorDef {
  readonly status: number
  readonly type: OpenAIErrorType
  /** Message template; `{name}` placeholders are filled from the params. */
  readonly message: string
  /** Whether a retry of the same request can succeed (false sends `x-should-retry: false`). */
  readonly retryable: boolean
  /**
   * What the request's outcome is when it ends with this error: `invalid` (the client's
   * fault, not counted against availability), `rejected` (refused for capacity or quota:
   * counted by reason), `failed` (the service's fault: counts against availability).
   */
  readonly outcome: ErrorOutcome
  /** The value of `x-gateway-reject-reason` when this error refuses a request for capacity. */
  readonly rejectReason?: string
}

export type ErrorOutcome = Extract<Outcome, 'invalid' | 'rejected' | 'failed'>

export const ERRORS = {
  GW_ERR_INVALID_JSON: {
    status: 400,
    type: 'invalid_request_error',
    message: 'The request body is not valid JSON.',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_INVALID_BODY: {
    status: 400,
    type: 'invalid_request_error',
    message: 'The request body must be a JSON object: {reason}.',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_INVALID_PARAM: {
    status: 400,
    type: 'invalid_request_error',
    message: "Invalid '{param}': {reason}.",
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_EMPTY_BODY: {
    status: 400,
    type: 'invalid_request_error',
    message: 'The request body is empty; send a JSON object.',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    type: 'invalid_request_error',
    message: "Unsupported content type '{contentType}'; send application/json.",
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_BODY_TOO_LARGE: {
    status: 413,
    type: 'invalid_request_error',
    message: 'The request body is larger than the limit of {limit} bytes.',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_MALFORMED_REQUEST: {
    status: 400,
    type: 'invalid_request_error',
    message: 'The request is not valid HTTP/1.1: {reason}.',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_HEADERS_TOO_LARGE: {
    status: 431,
    type: 'invalid_request_error',
    message: 'The request headers are larger than the limit of {limit} bytes.',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_REQUEST_TIMEOUT: {
    status: 408,
    type: 'timeout_error',
    message:
      'The request was not received in time: its headers are due within {headersMs} ms, all of it within {requestMs} ms.',
    outcome: 'invalid',
    retryable: true,
  },
  GW_ERR_ROUTE_NOT_FOUND: {
    status: 404,
    type: 'not_found_error',
    message: 'No route for {method} {url}.',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_MODEL_NOT_FOUND: {
    status: 404,
    type: 'not_found_error',
    message: "The model '{model}' does not exist or is not served here.",
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_UNKNOWN_CLASS: {
    status: 400,
    type: 'invalid_request_error',
    message: "Unknown priority class '{class}'; known classes: {known}.",
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_MISSING_API_KEY: {
    status: 401,
    type: 'authentication_error',
    message: 'No API key was sent; send it as Authorization: Bearer KEY or as x-api-key.',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_INVALID_API_KEY: {
    status: 401,
    type: 'authentication_error',
    message: 'The API key is not valid here.',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_ADMIN_UNAUTHORIZED: {
    status: 401,
    type: 'authentication_error',
    message:
      'This admin route needs the admin token: send it as Authorization: Bearer TOKEN (server.admin_token).',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_UNKNOWN_TENANT: {
    status: 401,
    type: 'authentication_error',
    message: 'The request names no known tenant in {header}.',
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_CLASS_NOT_ALLOWED: {
    status: 403,
    type: 'permission_error',
    message: "Tenant '{tenant}' may not use the class '{class}'; its classes: {allowed}.",
    outcome: 'invalid',
    retryable: false,
  },
  GW_ERR_RATE_LIMITED: {
    status: 429,
    type: 'rate_limit_error',
    message: "Tenant '{tenant}' is over its {limit} limit; retry after {retryAfterMs} ms.",
    outcome: 'rejected',
    retryable: true,
    rejectReason: 'rate_limited',
  },
  GW_ERR_BUDGET_EXHAUSTED: {
    status: 429,
    type: 'rate_limit_error',
    message: "Tenant '{tenant}' has spent its daily token budget; it renews at 00:00 UTC.",
    outcome: 'rejected',
    retryable: false,
    rejectReason: 'budget_exhausted',
  },
  GW_ERR_UPSTREAM_UNREACHABLE: {
    status: 502,
    type: 'server_error',
    message: 'The model server could not be reached.',
    outcome: 'failed',
    retryable: true,
  },
  GW_ERR_UPSTREAM_RESET: {
    status: 502,
    type: 'server_error',
    message: 'The model server closed the connection before answering.',
    outcome: 'failed',
    retryable: true,
  },
  GW_ERR_UPSTREAM_TIMEOUT: {
    status: 504,
    type: 'timeout_error',
    message: 'The model server did not answer in time.',
    outcome: 'failed',
    retryable: true,
  },
  GW_ERR_UPSTREAM_STREAM_FAILED: {
    status: 502,
    type: 'server_error',
    message: 'The model server failed while streaming the response; the response is incomplete.',
    outcome: 'failed',
    retryable: true,
  },
  GW_ERR_DRAINING: {
    status: 503,
    type: 'service_unavailable_error',
    message: 'The gateway is shutting down; retry on another replica.',
    outcome: 'rejected',
    retryable: true,
    rejectReason: 'draining',
  },
  GW_ERR_NO_BACKEND: {
    status: 503,
    type: 'service_unavailable_error',
    message: "No healthy model server is available for '{model}' right now.",
    outcome: 'rejected',
    retryable: true,
    rejectReason: 'no_backend',
  },
  GW_ERR_TTFT_SLO: {
    status: 503,
    type: 'service_unavailable_error',
    message:
      'The {class} time-to-first-token objective cannot be met now (predicted {predicted} ms); retry later.',
    outcome: 'rejected',
    retryable: true,
    rejectReason: 'ttft_slo',
  },
  GW_ERR_QUEUE_FULL: {
    status: 503,
    type: 'service_unavailable_error',
    message: 'The {class} queue is full; retry later.',
    outcome: 'rejected',
    retryable: true,
    rejectReason: 'queue_full',
  },
  GW_ERR_OVERLOADED: {
    status: 503,
    type: 'service_unavailable_error',
    message: 'The gateway is overloaded (its event loop is {lagMs} ms behind); retry later.',
    outcome: 'rejected',
    retryable: true,
    rejectReason: 'overloaded',
  },
  GW_ERR_QUEUE_TIMEOUT: {
    status: 503,
    type: 'service_unavailable_error',
    message: 'The request waited too long in the {class} queue to meet its objective; retry later.',
    outcome: 'rejected',
    retryable: true,
    rejectReason: 'queue_timeout',
  },
  GW_ERR_KV_EXHAUSTED: {
    status: 503,
    type: 'service_unavailable_error',
    message: 'The model servers lack KV-cache room for this request now; retry later.',
    outcome: 'rejected',
    retryable: true,
    rejectReason: 'kv_exhausted',
  },
  GW_ERR_TTFT_UNREACHABLE: {
    status: 503,
    type: 'service_unavailable_error',
    message:
      'The {class} time-to-first-token objective ({slo} ms) cannot be met for this request even on an idle server (predicted {predicted} ms for {tokens} prompt tokens); shorten the prompt or use another class.',
    outcome: 'rejected',
    retryable: false,
    rejectReason: 'ttft_unreachable',
  },
  GW_ERR_LIMITER_UNAVAILABLE: {
    status: 503,
    type: 'service_unavailable_error',
    message:
      "The tenant limits store cannot be reached, and limits.on_store_error is 'fail_closed'; retry shortly.",
    outcome: 'failed',
    retryable: true,
  },
  GW_ERR_INTERNAL: {
    status: 500,
    type: 'server_error',
    message: 'The gateway failed to handle the request.',
    outcome: 'failed',
    retryable: true,
  },
} as const satisfies Record<string, ErrorDef>

export type ErrorCode = keyof typeof ERRORS

export type ErrorParams = Readonly<Record<string, string | number>>

const PLACEHOLDER = /\{(\w+)\}/g

/** An error the gateway answers a client with. `cause` stays internal (logs only). */
export class GatewayError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly type: OpenAIErrorType
  readonly retryable: boolean
  readonly rejectReason: string | undefined
  readonly outcome: ErrorOutcome
  readonly param: string | null
  /** Milliseconds until a retry may succeed (sent as `retry-after-ms` and, rounded up to seconds, `retry-after`). */
  retryAfterMs: number | undefined
  /** More response headers that go with this error (a tenant's x-ratelimit-* state). */
  readonly headers: Readonly<Record<string, string>> | undefined

  constructor(
    code: ErrorCode,
    params: ErrorParams = {},
    options: {
      cause?: unknown
      param?: string
      retryAfterMs?: number
      headers?: Readonly<Record<string, string>>
    } = {},
  ) {
    const def: ErrorDef = ERRORS[code]
    super(
      def.message.replace(PLACEHOLDER, (_, k: string) => String(params[k] ?? '')),
      options.cause === undefined ? undefined : { cause: options.cause },
    )
    this.name = 'GatewayError'
    this.code = code
    this.status = def.status
    this.type = def.type
    this.retryable = def.retryable
    this.rejectReason = def.rejectReason
    this.outcome = def.outcome
    this.param = options.param ?? null
    this.retryAfterMs = options.retryAfterMs
    this.headers = options.headers
  }

  /** The OpenAI-shaped error body. */
  toBody(): { error: { message: string; type: string; code: string; param: string | null } } {
    return { error: { message: this.message, type: this.type, code: this.code, param: this.param } }
  }

  toJSON(): string {
    return JSON.stringify(this.toBody())
  }
}

/** The OpenAI SDKs ignore a Retry-After above 60 s, so the gateway never sends more. */
export const MAX_RETRY_AFTER_MS = 60_000

/** Response headers that go with an error (its own extra headers, retry hints, reject reason). */
export function errorHeaders(err: GatewayError): Record<string, string> {
  const headers: Record<string, string> = { ...err.headers, 'content-type': 'application/json' }
  if (!err.retryable) headers['x-should-retry'] = 'false'
  if (err.status === 401) headers['www-authenticate'] = 'Bearer'
  if (err.rejectReason !== undefined) headers['x-gateway-reject-reason'] = err.rejectReason
  if (err.retryAfterMs !== undefined) {
    const ms = Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.ceil(err.retryAfterMs)))
    headers['retry-after-ms'] = String(ms)
    headers['retry-after'] = String(Math.max(1, Math.ceil(ms / 1000)))
  }
  return headers
}
