/**
 * The deterministic scenario of constructed tickets used by the scenario test and the
 * promtool metrics check: 40 requests of every outcome, verdict, reason and kind.
 */
import type { Ticket } from '../../../src/ticket.js'
import { type TicketSpec, ticket } from './fixtures.js'

const gaps = (n: number, ms: number) => Array.from({ length: n }, () => ms)

export function scenario(clockNow: () => number): Ticket[] {
  const out: Ticket[] = []
  const add = (n: number, spec: TicketSpec) => {
    for (let i = 0; i < n; i++) out.push(ticket(clockNow() - 60_000, spec))
  }
  // A: good, streamed (TTFT 200 ms, 10 tokens, TPOT 20 ms), estimator predicted 250 ms.
  add(10, {
    tenant: 'acme',
    ttft: 200,
    e2e: 380,
    chunks: 10,
    itl: gaps(9, 20),
    predictedTtftMs: 250,
    dispatch: 5,
  })
  // B: TTFT miss (800 ms); TPOT exactly at the SLO (50 ms) is met.
  add(3, { tenant: 'globex', ttft: 800, e2e: 1_000, chunks: 5, dispatch: 600 })
  // C: TPOT miss (60 ms), long prompt.
  add(2, { tenant: 'acme', ttft: 100, e2e: 100 + 99 * 60, chunks: 100, promptTokens: 2_000 })
  // D: rejections.
  add(3, { tenant: 'acme', outcome: 'rejected', errorCode: 'ttft_slo' })
  add(1, { tenant: 'globex', outcome: 'rejected', errorCode: 'ttft_slo' })
  add(2, { tenant: 'globex', outcome: 'rejected', errorCode: 'queue_full' })
  add(1, { tenant: 'globex', outcome: 'rejected', errorCode: 'queue_timeout', e2e: 5_000 })
  // E: degraded and still good.
  add(3, { tenant: 'acme', ttft: 300, e2e: 390, chunks: 10, degraded: ['cap_max_tokens:512'] })
  // F: cancelled by the client after 3 chunks (the stream had started: status 200).
  add(2, { tenant: 'globex', outcome: 'cancelled', status: 200, ttft: 100, chunks: 3 })
  // G: failures.
  add(1, { tenant: 'acme', outcome: 'upstream_error', status: 503, e2e: 50 })
  add(1, {
    tenant: 'acme',
    class: 'batch',
    outcome: 'failed',
    errorCode: 'GW_ERR_UPSTREAM_TIMEOUT',
    e2e: 300_000,
  })
  // H: batch, non-streamed, good (E2E 60 s within 30 min).
  const usage = { promptTokens: 5_000, completionTokens: 500 }
  add(4, { tenant: 'acme', class: 'batch', stream: false, e2e: 60_000, usage })
  // I: batch E2E miss (31 min).
  add(1, { tenant: 'acme', class: 'batch', stream: false, e2e: 31 * 60_000, usage })
  // J: invalid input.
  add(2, { tenant: 'acme', outcome: 'invalid', errorCode: 'GW_ERR_INVALID_JSON' })
  // K: client errors: the server's 400 on the input (a prompt over the context length).
  add(2, { tenant: 'acme', outcome: 'upstream_error', status: 400, e2e: 30 })
  // L: the server's 429 (its capacity): an error, not a client error.
  add(1, { tenant: 'globex', outcome: 'upstream_error', status: 429, e2e: 20 })
  // M: interactive, non-streamed, 100 tokens in 2 s: good (E2E <= 0.5 + 0.05 x 99 s).
  add(1, { tenant: 'acme', stream: false, e2e: 2_000, usage: { promptTokens: 50, completionTokens: 100 } })
  return out
}
