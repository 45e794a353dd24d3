import { describe, expect, it } from 'vitest'
import {
  isClientErrorStatus,
  measure,
  nonStreamedE2eObjectiveS,
  verdictOf,
} from '../../../src/telemetry/index.js'
import { ticket } from './fixtures.js'

const interactive = { ttft_ms: 500, tpot_ms: 50 }
const all = { ttft_ms: 500, tpot_ms: 50, e2e_ms: 5_000 }

describe('measure (vLLM bench serve definitions)', () => {
  it('computes TTFT, E2E and TPOT = (E2E - TTFT) / (tokens - 1)', () => {
    const m = measure(ticket(0, { ttft: 200, e2e: 1_200, chunks: 11 }))
    expect(m.ttftS).toBe(0.2)
    expect(m.e2eS).toBe(1.2)
    expect(m.tpotS).toBeCloseTo(0.1, 12)
    expect(m.outputTokens).toBe(11)
  })

  it('prefers usage.completionTokens over the chunk count', () => {
    const m = measure(
      ticket(0, { ttft: 200, e2e: 1_200, chunks: 5, usage: { promptTokens: 40, completionTokens: 21 } }),
    )
    expect(m.outputTokens).toBe(21)
    expect(m.promptTokens).toBe(40)
    expect(m.tpotS).toBeCloseTo(0.05, 12)
  })

  it('has no TPOT for one output token', () => {
    expect(measure(ticket(0, { ttft: 100, e2e: 100, chunks: 1 })).tpotS).toBeUndefined()
  })

  it('non-streamed: no TTFT and no TPOT measured, only E2E', () => {
    const m = measure(
      ticket(0, { stream: false, e2e: 800, usage: { promptTokens: 10, completionTokens: 100 } }),
    )
    expect(m.streamed).toBe(false)
    expect(m.ttftS).toBeUndefined()
    expect(m.tpotS).toBeUndefined()
    expect(m.e2eS).toBe(0.8)
  })
})

describe('verdictOf', () => {
  it('good when every SLO is met, a threshold itself included', () => {
    expect(verdictOf(ticket(0, { ttft: 500, e2e: 1_000, chunks: 11 }), interactive)).toEqual({ kind: 'good' })
  })

  it('names each SLO missed', () => {
    expect(verdictOf(ticket(0, { ttft: 501, e2e: 900, chunks: 11 }), interactive)).toEqual({
      kind: 'missed',
      missed: ['ttft'],
    })
    expect(verdictOf(ticket(0, { ttft: 100, e2e: 1_200, chunks: 11 }), interactive)).toEqual({
      kind: 'missed',
      missed: ['tpot'],
    })
    expect(verdictOf(ticket(0, { ttft: 600, e2e: 6_000, chunks: 11 }), all)).toEqual({
      kind: 'missed',
      missed: ['ttft', 'tpot', 'e2e'],
    })
  })

  describe('non-streamed: E2E against TTFT + TPOT x (output tokens - 1), not TTFT = E2E', () => {
    const usage = (completionTokens: number) => ({ promptTokens: 1, completionTokens })
    const nonStreamed = (e2e: number, tokens: number) =>
      ticket(0, { stream: false, e2e, usage: usage(tokens) })

    it('is good when the whole answer took no longer than a streamed one may (2 s <= 0.5 + 0.05 x 99 s)', () => {
      expect(nonStreamedE2eObjectiveS(interactive, 100)).toBeCloseTo(5.45, 12)
      expect(verdictOf(nonStreamed(2_000, 100), interactive)).toEqual({ kind: 'good' })
      // the objective itself is met (<=), as a histogram's `le`
      expect(verdictOf(nonStreamed(5_450, 100), interactive)).toEqual({ kind: 'good' })
    })

    it('misses `e2e` (never `ttft`) when it took longer', () => {
      expect(verdictOf(nonStreamed(5_451, 100), interactive)).toEqual({ kind: 'missed', missed: ['e2e'] })
      // one token: the TTFT objective alone
      expect(verdictOf(nonStreamed(500, 1), interactive)).toEqual({ kind: 'good' })
      expect(verdictOf(nonStreamed(501, 1), interactive)).toEqual({ kind: 'missed', missed: ['e2e'] })
    })

    it("is capped by the class's own E2E objective", () => {
      // all: ttft 500, tpot 50, e2e 5 s; 300 tokens derive 15.45 s, the class allows 5 s
      expect(nonStreamedE2eObjectiveS(all, 300)).toBe(5)
      expect(verdictOf(nonStreamed(5_001, 300), all)).toEqual({ kind: 'missed', missed: ['e2e'] })
      expect(verdictOf(nonStreamed(4_000, 300), all)).toEqual({ kind: 'good' })
    })

    it('uses the E2E objective alone without TTFT and TPOT, and is good with neither', () => {
      const batch = { e2e_ms: 1_800_000 }
      expect(verdictOf(nonStreamed(60_000, 500), batch)).toEqual({ kind: 'good' })
      expect(verdictOf(nonStreamed(1_800_001, 500), batch)).toEqual({ kind: 'missed', missed: ['e2e'] })
      const ttftOnly = { ttft_ms: 500 }
      expect(nonStreamedE2eObjectiveS(ttftOnly, 10)).toBeUndefined()
      expect(verdictOf(nonStreamed(9_000, 10), ttftOnly)).toEqual({ kind: 'good' })
    })

    it('a streamed request is still judged on its TTFT', () => {
      expect(verdictOf(ticket(0, { ttft: 600, e2e: 2_000, chunks: 100 }), interactive)).toEqual({
        kind: 'missed',
        missed: ['ttft'],
      })
    })
  })

  it('counts an unmeasured latency as missed, never as met', () => {
    expect(verdictOf(ticket(0, { chunks: 3 }), all)).toEqual({ kind: 'missed', missed: ['ttft', 'e2e'] })
  })

  it('is good for a class without SLOs', () => {
    expect(verdictOf(ticket(0, { ttft: 99_999, e2e: 99_999, chunks: 2 }), {})).toEqual({
      kind: 'good',
    })
    expect(verdictOf(ticket(0, { ttft: 99_999, e2e: 99_999, chunks: 2 }), undefined)).toEqual({
      kind: 'good',
    })
  })

  it('rejected with the reason', () => {
    expect(verdictOf(ticket(0, { outcome: 'rejected', errorCode: 'ttft_slo' }), interactive)).toEqual({
      kind: 'rejected',
      reason: 'ttft_slo',
    })
    expect(verdictOf(ticket(0, { outcome: 'rejected', errorCode: 'GW_ERR_DRAINING' }), interactive)).toEqual({
      kind: 'rejected',
      reason: 'draining',
    })
    expect(
      verdictOf(ticket(0, { outcome: 'rejected', errorCode: 'GW_ERR_RATE_LIMITED' }), interactive),
    ).toEqual({
      kind: 'rejected',
      reason: 'rate_limited',
    })
    expect(verdictOf(ticket(0, { outcome: 'rejected' }), interactive)).toEqual({
      kind: 'rejected',
      reason: 'unknown',
    })
  })

  it('failed with the kind', () => {
    const v = (spec: Parameters<typeof ticket>[1]) => verdictOf(ticket(0, spec), interactive)
    expect(v({ outcome: 'failed', errorCode: 'GW_ERR_UPSTREAM_TIMEOUT' })).toEqual({
      kind: 'failed',
      errorKind: 'upstream_timeout',
    })
    expect(v({ outcome: 'upstream_error', status: 503 })).toEqual({
      kind: 'failed',
      errorKind: 'upstream_5xx',
    })
    // 408 and 429 are the server's timeout and capacity: errors, with their own kinds
    expect(v({ outcome: 'upstream_error', status: 429 })).toEqual({
      kind: 'failed',
      errorKind: 'upstream_429',
    })
    expect(v({ outcome: 'upstream_error', status: 408 })).toEqual({
      kind: 'failed',
      errorKind: 'upstream_408',
    })
    expect(v({ outcome: 'pending' })).toEqual({ kind: 'failed', errorKind: 'unfinished' })
  })

  it("client_error for the server's 4xx on the client's input (not 408, not 429)", () => {
    const v = (status: number) => verdictOf(ticket(0, { outcome: 'upstream_error', status }), interactive)
    expect(v(400)).toEqual({ kind: 'client_error', status: 400 })
    expect(v(404)).toEqual({ kind: 'client_error', status: 404 })
    expect(v(422)).toEqual({ kind: 'client_error', status: 422 })
    expect(v(499)).toEqual({ kind: 'client_error', status: 499 })
    expect(isClientErrorStatus(408)).toBe(false)
    expect(isClientErrorStatus(429)).toBe(false)
    expect(isClientErrorStatus(500)).toBe(false)
    expect(isClientErrorStatus(399)).toBe(false)
  })

  it('cancelled and invalid', () => {
    expect(verdictOf(ticket(0, { outcome: 'cancelled', ttft: 10 }), interactive)).toEqual({
      kind: 'cancelled',
    })
    expect(
      verdictOf(ticket(0, { outcome: 'invalid', errorCode: 'GW_ERR_INVALID_JSON' }), interactive),
    ).toEqual({
      kind: 'invalid',
    })
  })
})
