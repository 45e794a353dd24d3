import { describe, expect, it } from 'vitest'
import type { PhaseStats, RoundResult, StreamStats } from '../measure.js'
import { type Results, verdicts } from '../overhead-report.js'

describe('overhead verdicts', () => {
  const phase = (p50: number, p99: number, rps = 1000, cpuUs = 100): PhaseStats => ({
    rps,
    p50,
    p99,
    ok: 1,
    failed: 0,
    cpuUs,
    busy: 0.5,
    lagP99: 0,
    others: 0,
    othersClient: 0,
  })
  const stream = (delayP50: number): StreamStats => ({
    delayP50,
    delayP99: delayP50 * 2,
    delayMean: delayP50,
    chunks: 20,
    streams: 1,
    failed: 0,
    eventsPerStream: 20,
    cpuUsPerChunk: 10,
    others: 0,
    othersClient: 0,
  })
  const round = (p50: number, p99: number, chunk: number, rps = 1000, cpuUs = 100): RoundResult => ({
    closed: phase(p50, p99, rps, cpuUs),
    open: phase(p50, p99, rps, cpuUs),
    stream: stream(chunk),
  })

  it('computes differences within each round, then takes the median over rounds', () => {
    // a noisy second round moves both targets; the per-round difference stays small
    const res: Results = new Map([
      ['direct', { label: 'direct', rounds: [round(0.2, 1, 0.2), round(5, 9, 3), round(0.2, 1, 0.2)] }],
      ['gateway', { label: 'gw', rounds: [round(0.5, 2, 0.3), round(5.2, 9.5, 3.1), round(0.6, 5, 0.25)] }],
    ])
    const v = verdicts(res)
    const p50 = v.find((x) => x.what.startsWith('added latency p50'))
    const p99 = v.find((x) => x.what.startsWith('added latency p99'))
    const chunk = v.find((x) => x.what.startsWith('added delay per SSE chunk, p50'))
    // diffs p50 [0.3, 0.2, 0.4] -> 0.3; median(gw) - median(direct) would be 0.4
    expect(p50?.measured).toBeCloseTo(0.3, 10)
    expect(p50?.met).toBe(true)
    // diffs p99 [1, 0.5, 4] -> 1
    expect(p99?.measured).toBeCloseTo(1, 10)
    expect(chunk?.measured).toBeCloseTo(0.1, 10)
  })

  it('reports a miss, and compares telemetry on with off and the gateway with nginx', () => {
    const res: Results = new Map([
      ['direct', { label: 'direct', rounds: [round(0.2, 1, 0.2)] }],
      ['gateway', { label: 'gw', rounds: [round(2, 10, 1, 900, 250)] }],
      ['gateway-off', { label: 'off', rounds: [round(2, 10, 1, 1000, 200)] }],
      ['nginx', { label: 'nginx', rounds: [round(0.3, 1, 0.2, 5000, 50)] }],
    ])
    const v = Object.fromEntries(verdicts(res).map((x) => [x.what, x]))
    expect(v['added latency p50 at 1,000 req/s']?.met).toBe(false)
    expect(v['added latency p99 at 1,000 req/s']?.measured).toBeCloseTo(9, 10)
    expect(v['CPU per request vs nginx at 1,000 req/s']?.measured).toBeCloseTo(5, 10)
    expect(v['req/s, telemetry on vs off (closed loop)']?.measured).toBeCloseTo(-10, 10)
    expect(v['req/s, telemetry on vs off (closed loop)']?.met).toBe(false)
    expect(v['req/s implied by CPU/req, on vs off (closed loop)']?.measured).toBeCloseTo(-20, 10)
  })

  it('gives no verdict without a gateway', () => {
    expect(verdicts(new Map([['direct', { label: 'd', rounds: [round(1, 1, 1)] }]]))).toEqual([])
  })
})
