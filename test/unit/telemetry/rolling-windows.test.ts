import { describe, expect, it, vi } from 'vitest'
import type { WindowStats } from '../../../src/telemetry/index.js'
import { RollingWindows } from '../../../src/telemetry/rolling-windows.js'
import { Sketch } from '../../../src/telemetry/sketch.js'
import { setup, testConfig, ticket } from './fixtures.js'

type State = { windows: Record<string, { '1m': WindowStats; '5m': WindowStats }> }

describe('Sketch', () => {
  it('answers quantiles within 2% of the exact nearest-rank value', () => {
    const sk = new Sketch()
    const xs: number[] = []
    let seed = 7
    for (let i = 0; i < 10_000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      const v = 1 + (seed / 2 ** 31) ** 3 * 20_000 // skewed, 1 ms .. 20 s
      xs.push(v)
      sk.add(v)
    }
    xs.sort((a, b) => a - b)
    for (const q of [0.5, 0.9, 0.99]) {
      const exact = xs[Math.ceil(q * xs.length) - 1]!
      expect(Math.abs(sk.quantile(q)! - exact) / exact).toBeLessThanOrEqual(0.0201)
    }
    expect(sk.count).toBe(10_000)
    expect(new Sketch().quantile(0.5)).toBeUndefined()
  })
})

describe('rolling windows per class', () => {
  it('computes goodput, attainment, rates and quantiles over 1 and 5 minutes, then rolls off', () => {
    const { telemetry, clock } = setup()
    const start = clock.now()
    // 60 s of traffic: every second one good request (TTFT 100 ms, 11 tokens, TPOT 20 ms),
    // every 10 s a TTFT miss, a rejection and a degraded good request, every 20 s an error.
    for (let s = 0; s < 60; s++) {
      const at = start + s * 1_000
      clock.advance(at + 999 - clock.now())
      telemetry.record(ticket(at, { ttft: 100, e2e: 300, chunks: 11, promptTokens: 89 }))
      if (s % 10 === 0) {
        telemetry.record(ticket(at, { ttft: 900, e2e: 1_100, chunks: 11 }))
        telemetry.record(ticket(at, { outcome: 'rejected', errorCode: 'queue_full' }))
        telemetry.record(ticket(at, { ttft: 100, e2e: 300, chunks: 11, degraded: ['cap_max_tokens:512'] }))
      }
      if (s % 20 === 0)
        telemetry.record(ticket(at, { outcome: 'failed', errorCode: 'GW_ERR_UPSTREAM_RESET' }))
    }
    const w = (telemetry.state() as State).windows.interactive!
    const m1 = w['1m']
    // offered = 60 + 6 + 6 + 6 + 3; good = 66; admitted = offered - 6 rejected.
    expect(m1.offered).toBe(81)
    expect(m1.good).toBe(66)
    expect(m1.rejected).toBe(6)
    expect(m1.admitted).toBe(75)
    expect(m1.degraded).toBe(6)
    expect(m1.errors).toBe(3)
    expect(m1.attainment).toBeCloseTo(66 / 81, 12)
    expect(m1.attainmentAdmitted).toBeCloseTo(66 / 75, 12)
    expect(m1.rejectionRate).toBeCloseTo(6 / 81, 12)
    expect(m1.rejectionsByReason).toEqual({ queue_full: 6 })
    expect(m1.degradationRate).toBeCloseTo(6 / 75, 12)
    expect(m1.errorRate).toBeCloseTo(3 / 75, 12)
    expect(m1.spanS).toBeCloseTo(59.999, 6) // since creation
    expect(m1.goodputRps).toBeCloseTo(66 / 59.999, 9)
    expect(m1.goodputTokensPerS).toBeCloseTo((66 * 11) / 59.999, 9)
    expect(m1.ttftMs.p50).toBeCloseTo(100, -1)
    expect(Math.abs(m1.ttftMs.p99! - 900) / 900).toBeLessThan(0.021)
    expect(Math.abs(m1.tpotMs.p50! - 20) / 20).toBeLessThan(0.021)
    expect(w['5m'].offered).toBe(81)

    // Two quiet minutes later the 1-minute window is empty, the 5-minute one still holds all.
    clock.advance(120_000)
    const later = (telemetry.state() as State).windows.interactive!
    expect(later['1m'].offered).toBe(0)
    expect(later['1m'].attainment).toBeNull()
    expect(later['1m'].ttftMs.p99).toBeNull()
    expect(later['5m'].offered).toBe(81)
    // And after five more minutes, nothing.
    clock.advance(300_000)
    expect((telemetry.state() as State).windows.interactive!['5m'].offered).toBe(0)
    telemetry.close()
  })

  it("adds up: the issue's window (8 server 4xx on bad input, 2 slow non-streamed) is all explained", () => {
    const { telemetry, clock } = setup()
    const at = clock.now() - 10_000
    const usage = { promptTokens: 20, completionTokens: 100 }
    for (let i = 0; i < 6; i++) telemetry.record(ticket(at, { ttft: 100, e2e: 600, chunks: 11 }))
    for (let i = 0; i < 8; i++)
      telemetry.record(ticket(at, { outcome: 'upstream_error', status: 400, e2e: 20 }))
    // 2 s for 100 tokens: over the 500 ms TTFT objective, within 0.5 + 0.05 x 99 = 5.45 s
    for (let i = 0; i < 2; i++) telemetry.record(ticket(at, { stream: false, e2e: 2_000, usage }))
    const m1 = (telemetry.state() as State).windows.interactive!['1m']
    expect(m1).toMatchObject({
      requests: 16,
      clientErrors: 8,
      invalid: 0,
      offered: 8,
      admitted: 8,
      good: 8,
      missed: 0,
      errors: 0,
      rejected: 0,
      cancelled: 0,
      attainment: 1,
      attainmentAdmitted: 1,
      errorRate: 0,
    })
    telemetry.close()
  })

  it('counts missed (by objective) and client errors apart, so every count adds up', () => {
    const { telemetry, clock } = setup()
    const at = clock.now() - 10_000
    const add = (n: number, spec: Parameters<typeof ticket>[1]) => {
      for (let i = 0; i < n; i++) telemetry.record(ticket(at, spec))
    }
    add(5, { ttft: 100, e2e: 300, chunks: 11 }) // good
    add(3, { ttft: 900, e2e: 1_100, chunks: 11 }) // ttft
    add(2, { ttft: 900, e2e: 9_000, chunks: 11 }) // ttft + tpot
    add(1, { stream: false, e2e: 9_000, usage: { promptTokens: 1, completionTokens: 10 } }) // e2e (0.95 s allowed)
    add(4, { outcome: 'rejected', errorCode: 'queue_full' })
    add(2, { outcome: 'upstream_error', status: 503, e2e: 10 })
    add(1, { outcome: 'upstream_error', status: 429, e2e: 10 }) // the server's capacity: an error
    add(1, { outcome: 'failed', errorCode: 'GW_ERR_UPSTREAM_RESET' })
    add(2, { outcome: 'cancelled', status: 200, ttft: 100, chunks: 2 })
    add(3, { outcome: 'upstream_error', status: 413, e2e: 10 }) // client errors
    add(1, { outcome: 'upstream_error', status: 400, e2e: 10 })
    add(2, { outcome: 'invalid', errorCode: 'GW_ERR_INVALID_JSON' })
    const m1 = (telemetry.state() as State).windows.interactive!['1m']
    expect(m1).toMatchObject({
      requests: 27,
      invalid: 2,
      clientErrors: 4,
      offered: 21,
      admitted: 17,
      good: 5,
      missed: 6,
      missedBy: { ttft: 5, tpot: 2, e2e: 1 },
      rejected: 4,
      errors: 4,
      cancelled: 2,
    })
    expect(m1.requests).toBe(m1.offered + m1.clientErrors + m1.invalid)
    expect(m1.offered).toBe(m1.good + m1.missed + m1.rejected + m1.errors + m1.cancelled)
    expect(m1.admitted).toBe(m1.offered - m1.rejected)
    expect(m1.attainment).toBeCloseTo(5 / 21, 12)
    expect(m1.errorRate).toBeCloseTo(4 / 17, 12)
    telemetry.close()
  })

  it('does not count invalid requests as offered', () => {
    const windows = new RollingWindows(0, ['interactive'])
    windows.of('interactive').record(1, {
      verdict: { kind: 'invalid' },
      degraded: false,
      serverError: false,
      ttftS: undefined,
      tpotS: undefined,
      outputTokens: 0,
      tokens: 0,
    })
    const m1 = windows.snapshot(2).interactive!['1m']
    expect(m1.offered).toBe(0)
    expect(m1.invalid).toBe(1)
    expect(m1.requests).toBe(1)
  })

  it('logs one summary line per class every summary_interval_ms (timer unref-ed, stopped by close)', () => {
    vi.useFakeTimers()
    try {
      const { telemetry, lines } = setup(testConfig({ telemetry: { summary_interval_ms: 60_000 } }))
      telemetry.record(ticket(999_000, { ttft: 100, e2e: 300, chunks: 11 }))
      vi.advanceTimersByTime(60_000)
      expect(lines).toHaveLength(2) // interactive, batch
      expect(lines[0]).toMatchObject({
        class: 'interactive',
        window: '1m',
        offered: 1,
        good: 1,
        missed: 0,
        client_errors: 0,
        attainment: 1,
      })
      telemetry.close()
      vi.advanceTimersByTime(120_000)
      expect(lines).toHaveLength(2)
    } finally {
      vi.useRealTimers()
    }
  })
})
