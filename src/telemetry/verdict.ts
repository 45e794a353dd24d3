/**
 * The per-request SLO verdict, and the latencies it is judged on.
 *
 * Definitions follow vLLM's `bench serve` (and DistServe):
 * - TTFT: request received (`arrivedAt`) to the first content token relayed (`firstTokenAt`).
 * - E2E: request received to the response finished (`finishedAt`).
 * - TPOT: (E2E - TTFT) / (output tokens - 1), only for responses of more than one token.
 * - Output tokens: `usage.completionTokens` when the upstream reported usage, else the
 *   number of content chunks relayed.
 * Non-streamed responses: only E2E is measured; for the verdict TTFT = E2E, and TPOT is
 * not judged (there is no first-token time to take it from).
 *
 * Latencies are compared in seconds, computed exactly as the histograms observe them, so
 * that "met" here is the same predicate as `le` in the histogram (`value <= edge`).
 */
import type { ClassConfig } from '../config/schema.js'
import { ERRORS, type ErrorDef } from '../errors.js'
import type { Ticket } from '../ticket.js'

export type SloName = 'ttft' | 'tpot' | 'e2e'

export type Verdict =
  | { readonly kind: 'good' }
  /** Succeeded but missed these SLOs (never empty). */
  | { readonly kind: 'missed'; readonly missed: readonly SloName[] }
  /** Refused by the gateway (capacity, quota, draining). */
  | { readonly kind: 'rejected'; readonly reason: string }
  /** Transport failure, upstream error status, or a gateway failure. */
  | { readonly kind: 'failed'; readonly errorKind: string }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'invalid' }

/** What one finished request measured, in seconds and tokens. */
export interface Measurement {
  /** True TTFT: streamed requests with a first content token only. */
  readonly ttftS: number | undefined
  /** TTFT used for the verdict: `ttftS`, else E2E. */
  readonly verdictTtftS: number | undefined
  readonly tpotS: number | undefined
  readonly e2eS: number | undefined
  readonly promptTokens: number
  readonly outputTokens: number
}

export type SloConfig = Pick<ClassConfig, 'slo'>

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
    ttftS,
    verdictTtftS: ttftS ?? e2eS,
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
  if (ticket.outcome === 'upstream_error') return ticket.status >= 500 ? 'upstream_5xx' : 'upstream_4xx'
  if (ticket.outcome === 'pending') return 'unfinished'
  const code = ticket.errorCode
  if (code === undefined) return 'unknown'
  return sanitizeLabel(code.startsWith(GW_ERR) ? code.slice(GW_ERR.length) : code)
}

/** Whether an error kind is the service's fault (counts against availability). */
export function isServerErrorKind(kind: string): boolean {
  return kind !== 'upstream_4xx'
}

/** Judge a measured, successful request against its class's SLOs. */
export function judge(m: Measurement, cls: SloConfig | undefined): Verdict {
  const slo = cls?.slo
  if (slo === undefined) return GOOD
  const missed: SloName[] = []
  // An unmeasured latency cannot be claimed to meet an SLO (except TPOT, which is
  // undefined for one-token and non-streamed responses by definition).
  if (slo.ttft_ms !== undefined && !(m.verdictTtftS !== undefined && m.verdictTtftS <= slo.ttft_ms / 1000)) {
    missed.push('ttft')
  }
  if (slo.tpot_ms !== undefined && m.tpotS !== undefined && m.tpotS > slo.tpot_ms / 1000) missed.push('tpot')
  if (slo.e2e_ms !== undefined && !(m.e2eS !== undefined && m.e2eS <= slo.e2e_ms / 1000)) missed.push('e2e')
  return missed.length === 0 ? GOOD : { kind: 'missed', missed }
}

const GOOD: Verdict = { kind: 'good' }
const CANCELLED: Verdict = { kind: 'cancelled' }
const INVALID: Verdict = { kind: 'invalid' }

/** The verdict of a finished request, from its outcome and (if it succeeded) its latencies. */
export function verdictOf(ticket: Ticket, classConfig: SloConfig | undefined): Verdict {
  return verdictWith(ticket, classConfig, undefined)
}

/** As `verdictOf`, reusing a measurement already taken. */
export function verdictWith(
  ticket: Ticket,
  classConfig: SloConfig | undefined,
  m: Measurement | undefined,
): Verdict {
  switch (ticket.outcome) {
    case 'ok':
      return judge(m ?? measure(ticket), classConfig)
    case 'rejected':
      return { kind: 'rejected', reason: rejectReasonOf(ticket) }
    case 'cancelled':
      return CANCELLED
    case 'invalid':
      return INVALID
    case 'failed':
    case 'upstream_error':
    case 'pending':
      return { kind: 'failed', errorKind: errorKindOf(ticket) }
  }
}
