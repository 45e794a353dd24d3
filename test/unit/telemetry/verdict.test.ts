import { describe, expect, it } from 'vitest'
import { measure, verdictOf } from '../../../src/telemetry/index.js'
import { ticket } from './fixtures.js'

const interactive = { slo: { ttft_ms: 500, tpot_ms: 50 } }
const all = { slo: { ttft_ms: 500, tpot_ms: 50, e2e_ms: 5_000 } }

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

  it('non-streamed: no TTFT and no TPOT measured; the verdict uses TTFT = E2E', () => {
    const m = measure(
      ticket(0, { stream: false, e2e: 800, usage: { promptTokens: 10, completionTokens: 100 } }),
    )
    expect(m.ttftS).toBeUndefined()
    expect(m.tpotS).toBeUndefined()
    expect(m.verdictTtftS).toBe(0.8)
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

  it('judges a non-streamed request with TTFT = E2E and no TPOT', () => {
    const fast = ticket(0, { stream: false, e2e: 400, usage: { promptTokens: 1, completionTokens: 300 } })
    expect(verdictOf(fast, interactive)).toEqual({ kind: 'good' })
    const slow = ticket(0, { stream: false, e2e: 700, usage: { promptTokens: 1, completionTokens: 2 } })
    expect(verdictOf(slow, interactive)).toEqual({ kind: 'missed', missed: ['ttft'] })
  })

  it('counts an unmeasured latency as missed, never as met', () => {
    expect(verdictOf(ticket(0, { chunks: 3 }), all)).toEqual({ kind: 'missed', missed: ['ttft', 'e2e'] })
  })

  it('is good for a class without SLOs', () => {
    expect(verdictOf(ticket(0, { ttft: 99_999, e2e: 99_999, chunks: 2 }), { slo: {} })).toEqual({
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
    expect(v({ outcome: 'upstream_error', status: 400 })).toEqual({
      kind: 'failed',
      errorKind: 'upstream_4xx',
    })
    expect(v({ outcome: 'pending' })).toEqual({ kind: 'failed', errorKind: 'unfinished' })
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
