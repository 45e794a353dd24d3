/**
 * A deterministic scenario of constructed tickets: every counter series must equal the
 * expected count exactly (and no other series may exist), and histogram counts must match.
 */
import { describe, expect, it } from 'vitest'
import { METRICS, type WindowStats } from '../../../src/telemetry/index.js'
import { samples, setup, value } from './fixtures.js'
import { scenario } from './scenario-tickets.js'

async function series(registry: Parameters<typeof samples>[0], name: string, keys: string[]) {
  const out: Record<string, number> = {}
  for (const s of await samples(registry, name)) {
    const k = keys.map((key) => s.labels[key]).join('/')
    out[k] = (out[k] ?? 0) + s.value
  }
  return out
}

describe('deterministic scenario: exact counters', () => {
  it('counts every outcome, verdict, reason, action, kind and token exactly', async () => {
    const { registry, telemetry, clock } = setup()
    const tickets = scenario(() => clock.now())
    expect(tickets).toHaveLength(40)
    for (const t of tickets) telemetry.record(t)
    const M = 'llama-3.1-8b'

    expect(await series(registry, METRICS.requests, ['class', 'tenant', 'outcome'])).toEqual({
      'interactive/acme/ok': 16,
      'interactive/globex/ok': 3,
      'interactive/acme/rejected': 3,
      'interactive/globex/rejected': 4,
      'interactive/globex/cancelled': 2,
      'interactive/acme/upstream_error': 3,
      'interactive/globex/upstream_error': 1,
      'interactive/acme/invalid': 2,
      'batch/acme/failed': 1,
      'batch/acme/ok': 5,
    })
    expect(await series(registry, METRICS.goodRequests, ['class', 'model', 'tenant'])).toEqual({
      [`interactive/${M}/acme`]: 14,
      [`batch/${M}/acme`]: 4,
    })
    // Missed: once per request (B, C, I), and by objective below.
    expect(await series(registry, METRICS.missedRequests, ['class', 'model', 'tenant'])).toEqual({
      [`interactive/${M}/acme`]: 2,
      [`interactive/${M}/globex`]: 3,
      [`batch/${M}/acme`]: 1,
    })
    expect(await series(registry, METRICS.goodTokens, ['class', 'tenant'])).toEqual({
      'interactive/acme': 230,
      'batch/acme': 2_000,
    })
    expect(await series(registry, METRICS.sloMissed, ['class', 'slo'])).toEqual({
      'interactive/ttft': 3,
      'interactive/tpot': 2,
      'batch/e2e': 1,
    })
    expect(await series(registry, METRICS.rejected, ['class', 'tenant', 'reason'])).toEqual({
      'interactive/acme/ttft_slo': 3,
      'interactive/globex/ttft_slo': 1,
      'interactive/globex/queue_full': 2,
      'interactive/globex/queue_timeout': 1,
    })
    expect(await series(registry, METRICS.degraded, ['class', 'action'])).toEqual({
      'interactive/cap_max_tokens': 3,
    })
    expect(await series(registry, METRICS.degradedRequests, ['class'])).toEqual({ interactive: 3 })
    expect(await series(registry, METRICS.errors, ['class', 'kind'])).toEqual({
      'interactive/upstream_5xx': 1,
      'interactive/upstream_429': 1,
      'interactive/upstream_4xx': 2, // client errors (K)
      'batch/upstream_timeout': 1,
    })
    // Prompt tokens of requests the server accepted (A 10x100, B 3x100, C 2x2000, E 3x100,
    // F 2x100, H+I 5x5000, M 50; not G, K, L: refused with 503/400/429, or timed out before
    // any answer);
    // completion tokens as relayed or reported.
    expect(await series(registry, METRICS.tokens, ['class', 'tenant', 'kind'])).toEqual({
      'interactive/acme/prompt': 1_000 + 4_000 + 300 + 50,
      'interactive/acme/completion': 100 + 200 + 30 + 100,
      'interactive/globex/prompt': 300 + 200,
      'interactive/globex/completion': 15 + 6,
      'batch/acme/prompt': 25_000,
      'batch/acme/completion': 2_500,
    })
    telemetry.close()
  })

  it('histogram counts match the scenario', async () => {
    const { registry, telemetry, clock } = setup()
    for (const t of scenario(() => clock.now())) telemetry.record(t)
    const count = (name: string, labels: Record<string, string> = {}) =>
      value(registry, `${name}_count`, labels)
    const bucket = (name: string, le: string, labels: Record<string, string> = {}) =>
      value(registry, `${name}_bucket`, { ...labels, le })

    // TTFT/TPOT: successful streamed requests with a first token (A, B, C, E).
    expect(await count(METRICS.ttft)).toBe(18)
    expect(await count(METRICS.tpot)).toBe(18)
    expect(await bucket(METRICS.ttft, '0.5', { class: 'interactive' })).toBe(15) // 18 - 3 TTFT misses
    expect(await bucket(METRICS.tpot, '0.05', { class: 'interactive' })).toBe(16) // 18 - 2 TPOT misses
    expect(await count(METRICS.ttft, { prompt_len: '1k-4k', output_len: '64-256' })).toBe(2)
    expect(await bucket(METRICS.ttft, '+Inf')).toBe(18)
    // E2E: every successful request (A, B, C, E, H, I, M).
    expect(await count(METRICS.e2e)).toBe(24)
    expect(await bucket(METRICS.e2e, '1800', { class: 'batch' })).toBe(4)
    expect(await count(METRICS.e2e, { class: 'batch', prompt_len: '4k-16k', output_len: '256-1k' })).toBe(5)
    // ITL: 9 gaps of each A request.
    expect(await count(METRICS.itl)).toBe(90)
    expect(await value(registry, `${METRICS.itl}_sum`)).toBeCloseTo(90 * 0.02, 9)
    // Queue wait: every dispatched request (31) and the queue_timeout refusal (1).
    expect(await count(METRICS.queueWait)).toBe(32)
    expect(await bucket(METRICS.queueWait, '0.5')).toBe(28) // B waited 0.6 s, the timeout 5 s
    // Prediction error: A only, |250 - 200| / 200 = 0.25.
    expect(await count(METRICS.predictionError)).toBe(10)
    expect(await bucket(METRICS.predictionError, '0.2')).toBe(0)
    expect(await bucket(METRICS.predictionError, '0.3')).toBe(10)

    const w = (telemetry.state() as { windows: Record<string, Record<'1m', WindowStats>> }).windows
    // Every request in one count: 34 = 30 offered + 2 client errors + 2 invalid, and
    // 30 offered = 14 good + 5 missed + 7 rejected + 2 errors (503, 429) + 2 cancelled.
    expect(w.interactive?.['1m']).toMatchObject({
      requests: 34,
      invalid: 2,
      clientErrors: 2,
      offered: 30,
      admitted: 23,
      good: 14,
      missed: 5,
      missedBy: { ttft: 3, tpot: 2, e2e: 0 },
      rejected: 7,
      degraded: 3,
      errors: 2,
      cancelled: 2,
    })
    expect(w.batch?.['1m']).toMatchObject({
      requests: 6,
      offered: 6,
      admitted: 6,
      good: 4,
      missed: 1,
      missedBy: { ttft: 0, tpot: 0, e2e: 1 },
      errors: 1,
    })
    telemetry.close()
  })
})
