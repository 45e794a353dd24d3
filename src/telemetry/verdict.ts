/**
 * The per-request SLO verdict, and the latencies it is judged on.
 *
 * Definitions follow vLLM's `bench serve` (and DistServe):
 * - TTFT: request received (`arrivedAt`) to the first content token relayed (`firstTokenAt`).
 * - E2E: request received to the response finished (`finishedAt`).
 * - TPOT: (E2E - TTFT) / (output tokens - 1), only for responses of more than one token.
 * - Output tokens: `usage.completionTokens` when the upstream reported usage, else the
 *   number of content chunks relayed.
 * Non-streamed responses: only E2E is measured (the client sees nothing before the whole
 * answer, so there is no first token to time). They are judged on E2E alone, against an
 * E2E objective derived from the request's objectives: TTFT objective + TPOT objective x
 * (output tokens - 1) when both are set, capped by the E2E objective when one is set; only
 * the E2E objective when TTFT or TPOT is not set; good when it succeeded and neither is.
 * A request's objectives are its class's, or its tenant's override (src/objectives.ts). A miss counts as `e2e`. (Not TTFT = E2E: that
 * fails a long answer that was generated as fast as a streamed one.)
 *
 * Client errors: an upstream 4xx relayed as is (the model server refused the client's
 * input: a prompt over the context length, an unknown parameter) is the client's fault,
 * as the gateway's own `invalid` 4xx: not offered load, not counted against attainment
 * or availability. Except 408 (the server timed out) and 429 (the server is over
 * capacity), which are the service's: errors, kinds `upstream_408` and `upstream_429`.
 *
 * Latencies are compared in seconds, computed exactly as the histograms observe them, so
 * that "met" here is the same predicate as `le` in the histogram (`value <= edge`).
 */
import { ERRORS, type ErrorDef } from '../errors.js'
import type { Objectives } from '../objectives.js'
import type { Ticket } from '../ticket.js'

export type SloName = 'ttft' | 'tpot' | 'e2e'

export type Verdict =
  | { readonly kind: 'good' }
  /** Succeeded but missed these SLOs (never empty). */
  | { readonly kind: 'missed'; readonly missed: readonly SloName[] }
  /** Refused by the gateway (capacity, quota, draining). */
  | { readonly kind: 'rejected'; readonly reason: string }
  /** Transport failure, upstream 5xx/408/429, or a gateway failure. */
  | { readonly kind: 'failed'; readonly errorKind: string }
  /** The upstream refused the client's input (4xx other than 408 and 429), relayed as is. */
  | { readonly kind: 'client_error'; readonly status: number }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'invalid' }

/** What one finished request measured, in seconds and tokens. */
export interface Measurement {
  /** The response was streamed (TTFT and TPOT are judged only then). */
  readonly streamed: boolean
  /** True TTFT: streamed requests with a first content token only. */
  readonly ttftS: number | undefined
  readonly tpotS: number | undefined
  readonly e2eS: number | undefined
  readonly promptTokens: number
  readonly outputTokens: number
}

/** Output tokens as vLLM counts them: reported usage, else relayed content chunks. */
export function outputTokensOf(ticket: Ticket): number {
  return ticket.usage?.completionTokens ?? ticket.contentChunks
}

/** Prompt tokens: reported usage, else the gateway's estimate. */
export function promptTokensOf(ticket: Ticket): number {
  return ticket.usage?.promptTokens ?? ticket.promptTokens
}

export function measure(ticket: Ticket): Measurement {
  const end = ticket.finishedAt ?? ticket.lastTokenAt
  const e2eS = end === undefined ? undefined : (end - ticket.arrivedAt) / 1000
  const ttftS =
    ticket.stream && ticket.firstTokenAt !== undefined
      ? (ticket.firstTokenAt - ticket.arrivedAt) / 1000
      : undefined
  const outputTokens = outputTokensOf(ticket)
  let tpotS: number | undefined
  if (ttftS !== undefined && e2eS !== undefined && outputTokens > 1) {
    tpotS = Math.max(0, e2eS - ttftS) / (outputTokens - 1)
  }
  return {
    streamed: ticket.stream,
    ttftS,
    tpotS,
    e2eS,
    promptTokens: promptTokensOf(ticket),
    outputTokens,
  }
}

const GW_ERR = 'GW_ERR_'

function isErrorCode(code: string): code is keyof typeof ERRORS {
  return Object.hasOwn(ERRORS, code)
}

const NOT_LABEL_CHARS = /[^a-z0-9_]+/g
const EDGE_UNDERSCORES = /^_+|_+$/g

/** Lower-case, `[a-z0-9_]` only, at most 48 characters: safe as a label value. */
export function sanitizeLabel(raw: string): string {
  const s = raw.toLowerCase().replace(NOT_LABEL_CHARS, '_').replace(EDGE_UNDERSCORES, '')
  return s.length === 0 ? 'unknown' : s.slice(0, 48)
}

/** The reject reason of a refused ticket: the error's reject reason, else its code or reason. */
export function rejectReasonOf(ticket: Ticket): string {
  const code = ticket.errorCode
  if (code === undefined) return 'unknown'
  if (isErrorCode(code)) {
    const def: ErrorDef = ERRORS[code]
    if (def.rejectReason !== undefined) return def.rejectReason
  }
  return sanitizeLabel(code.startsWith(GW_ERR) ? code.slice(GW_ERR.length) : code)
}

/**
 * The error kind of a failed ticket: `upstream_4xx` / `upstream_5xx` for an upstream error
 * status relayed as is, else the GW_ERR_* code without its prefix (`upstream_timeout`,
 * `upstream_unreachable`, `upstream_reset`, `upstream_stream_failed`, `internal`, ...).
 */
export function errorKindOf(ticket: Ticket): string {
  if (ticket.outcome === 'upstream_error') {
    const status = ticket.status
    if (status >= 500) return 'upstream_5xx'
    if (status === 408) return 'upstream_408'
    if (status === 429) return 'upstream_429'
    return CLIENT_ERROR_KIND
  }
  if (ticket.outcome === 'pending') return 'unfinished'
  const code = ticket.errorCode
  if (code === undefined) return 'unknown'
  return sanitizeLabel(code.startsWith(GW_ERR) ? code.slice(GW_ERR.length) : code)
}

/** The error kind of a client error: an upstream 4xx on the client's input. */
export const CLIENT_ERROR_KIND = 'upstream_4xx'

/** Whether an error kind is the service's fault (counts against availability). */
export function isServerErrorKind(kind: string): boolean {
  return kind !== CLIENT_ERROR_KIND
}

/**
 * Whether an upstream error status is the client's fault (its input): 4xx except 408
 * (Request Timeout: the server's timeout) and 429 (Too Many Requests: its capacity).
 */
export function isClientErrorStatus(status: number): boolean {
  return status >= 400 && status <= 499 && status !== 408 && status !== 429
}

/**
 * The E2E objective (seconds) a non-streamed response of `outputTokens` is judged on:
 * TTFT + TPOT x (output tokens - 1) when its objectives set both (capped by its E2E
 * objective when set), else its E2E objective, else none (undefined: good when it succeeded).
 */
export function nonStreamedE2eObjectiveS(slo: Objectives, outputTokens: number): number | undefined {
  const own = slo.e2e_ms === undefined ? undefined : slo.e2e_ms / 1000
  if (slo.ttft_ms === undefined || slo.tpot_ms === undefined) return own
  const derived = (slo.ttft_ms + slo.tpot_ms * Math.max(0, outputTokens - 1)) / 1000
  return own === undefined ? derived : Math.min(own, derived)
}

/**
 * Judge a measured, successful request against its objectives (src/objectives.ts: its
 * class's, or its tenant's override); undefined: none, good.
 */
export function judge(m: Measurement, slo: Objectives | undefined): Verdict {
  if (slo === undefined) return GOOD
  const missed: SloName[] = []
  // An unmeasured latency cannot be claimed to meet an SLO (except TPOT, which is
  // undefined for one-token responses by definition).
  if (!m.streamed) {
    const objective = nonStreamedE2eObjectiveS(slo, m.outputTokens)
    if (objective !== undefined && !(m.e2eS !== undefined && m.e2eS <= objective)) missed.push('e2e')
    return missed.length === 0 ? GOOD : { kind: 'missed', missed }
  }
  if (slo.ttft_ms !== undefined && !(m.ttftS !== undefined && m.ttftS <= slo.ttft_ms / 1000)) {
    missed.push('ttft')
  }
  if (slo.tpot_ms !== undefined && m.tpotS !== undefined && m.tpotS > slo.tpot_ms / 1000) missed.push('tpot')
  if (slo.e2e_ms !== undefined && !(m.e2eS !== undefined && m.e2eS <= slo.e2e_ms / 1000)) missed.push('e2e')
  return missed.length === 0 ? GOOD : { kind: 'missed', missed }
}

const GOOD: Verdict = { kind: 'good' }
const CANCELLED: Verdict = { kind: 'cancelled' }
const INVALID: Verdict = { kind: 'invalid' }

/**
 * The verdict of a finished request, from its outcome and (if it succeeded) its latencies
 * against `slo`, its objectives (`objectivesOf(ticket, classes)`).
 */
export function verdictOf(ticket: Ticket, slo: Objectives | undefined): Verdict {
  return verdictWith(ticket, slo, undefined)
}

/** As `verdictOf`, reusing a measurement already taken. */
export function verdictWith(
  ticket: Ticket,
  slo: Objectives | undefined,
  m: Measurement | undefined,
): Verdict {
  switch (ticket.outcome) {
    case 'ok':
      return judge(m ?? measure(ticket), slo)
    case 'rejected':
      return { kind: 'rejected', reason: rejectReasonOf(ticket) }
    case 'cancelled':
      return CANCELLED
    case 'invalid':
      return INVALID
    case 'upstream_error':
      if (isClientErrorStatus(ticket.status)) return { kind: 'client_error', status: ticket.status }
      return { kind: 'failed', errorKind: errorKindOf(ticket) }
    case 'failed':
    case 'pending':
      return { kind: 'failed', errorKind: errorKindOf(ticket) }
  }
}

const VERDICT_KINDS: ReadonlySet<unknown> = new Set<Verdict['kind']>([
  'good',
  'missed',
  'rejected',
  'failed',
  'client_error',
  'cancelled',
  'invalid',
])

/** `x` when it is a Verdict (what a recorder returned), else undefined. */
export function asVerdict(x: unknown): Verdict | undefined {
  return typeof x === 'object' && x !== null && VERDICT_KINDS.has((x as { kind?: unknown }).kind)
    ? (x as Verdict)
    : undefined
}
