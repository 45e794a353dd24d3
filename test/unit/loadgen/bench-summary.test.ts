import { describe, expect, it } from 'vitest'
import { benchMarkdown, loopWarning, type RunInfo } from '../../../src/loadgen/bench-markdown.js'
import type { BenchRecord } from '../../../src/loadgen/bench-run.js'
import { isGood, reasonOf, summarizeRun } from '../../../src/loadgen/bench-summary.js'
import { niceCeil, ttftCdfSvg } from '../../../src/loadgen/ttft-cdf-svg.js'

let n = 0
/** A record; a key given as undefined is left out. */
function rec(over: { [K in keyof BenchRecord]?: BenchRecord[K] | undefined }): BenchRecord {
  const r: Record<string, unknown> = {
    index: n++,
    class: 'interactive',
    dueMs: 0,
    sentMs: 0,
    promptTokensSent: 100,
    maxTokens: 10,
    status: 200,
    headers: {},
    latencyMs: 500,
    itlMs: [10, 10],
    chunks: 3,
    outputTokens: 10,
    ttftMs: 100,
    e2eMs: 400,
    tpotMs: 30,
    ...over,
  }
  for (const [k, v] of Object.entries(r)) if (v === undefined) delete r[k]
  return r as unknown as BenchRecord
}

const SLOS = new Map([
  ['interactive', { ttft_ms: 500, tpot_ms: 50 }],
  ['batch', { e2e_ms: 10_000 }],
])

describe('the run summary', () => {
  it('good = ok and within every objective; attainment of offered and of admitted; goodput per second', () => {
    const records = [
      rec({}), // good
      rec({ ttftMs: 600 }), // admitted, missed TTFT
      rec({ tpotMs: 60 }), // missed TPOT
      rec({
        status: 503,
        headers: { 'x-gateway-reject-reason': 'ttft_slo', 'retry-after-ms': '800' },
        latencyMs: 2,
      }),
      rec({
        status: 503,
        headers: { 'x-gateway-reject-reason': 'ttft_slo', 'retry-after': '1' },
        latencyMs: 4,
      }),
      rec({ status: 200, error: 'stream:GW_ERR_UPSTREAM_STREAM_FAILED' }), // admitted, failed
      rec({ status: 0, error: 'ECONNRESET' }),
      rec({ headers: { 'x-gateway-degraded': 'cap_max_tokens' }, outputTokens: 5 }), // good, degraded
      rec({ class: 'batch', e2eMs: 9000, outputTokens: 100 }),
      rec({ class: 'batch', e2eMs: 11_000 }),
    ]
    const s = summarizeRun(records, SLOS, 2000)
    const i = s.classes.find((c) => c.class === 'interactive')!
    expect(i).toMatchObject({ offered: 8, admitted: 5, ok: 4, good: 2, refused: 2, failed: 2, degraded: 1 })
    expect(i.attainmentOffered).toBe(2 / 8)
    expect(i.attainmentAdmitted).toBe(2 / 5)
    expect(i.rejectionRate).toBe(2 / 8)
    expect(i.degradationRate).toBe(1 / 5)
    expect(i.goodputRps).toBe(1) // 2 good in 2 s
    expect(i.goodputTps).toBe((10 + 5) / 2)
    expect(i.throughputTps).toBe((10 + 10 + 10 + 5) / 2)
    expect(i.ttftMs.count).toBe(4) // latency of the ok requests only
    expect(i.itlMs.count).toBe(8) // every gap of every ok request
    const b = s.classes.find((c) => c.class === 'batch')!
    expect(b).toMatchObject({ offered: 2, good: 1 })
    expect(s.classes.at(-1)).toMatchObject({ class: 'all', offered: 10, good: 3 })
    const ttftSlo = s.reasons.find((r) => r.reason === 'ttft_slo')!
    expect(ttftSlo).toMatchObject({ class: 'interactive', kind: 'refused', count: 2, rate: 2 / 8 })
    expect(ttftSlo.latencyMs.p50).toBe(3)
    expect(ttftSlo.retryAfterMs.p50).toBe(900)
    expect(s.reasons.filter((r) => r.kind === 'failed').map((r) => r.reason)).toEqual([
      'stream:GW_ERR_UPSTREAM_STREAM_FAILED',
      'ECONNRESET',
    ])
  })

  it('a one-token answer has no TPOT and passes a TPOT objective; no TTFT fails a TTFT objective', () => {
    expect(isGood(rec({ tpotMs: undefined, outputTokens: 1 }), { tpot_ms: 1 })).toBe(true)
    expect(isGood(rec({ ttftMs: undefined }), { ttft_ms: 1000 })).toBe(false)
    expect(isGood(rec({ status: 429 }), {})).toBe(false)
    expect(reasonOf(rec({ status: 429, errorCode: 'GW_ERR_RATE_LIMITED' }))).toBe('GW_ERR_RATE_LIMITED')
    expect(reasonOf(rec({ status: 502, errorCode: 'GW_ERR_UPSTREAM_RESET' }))).toBe(
      'http_502:GW_ERR_UPSTREAM_RESET',
    )
  })

  it('stratifies by the prompt-length buckets of telemetry, in their order', () => {
    const records = [
      rec({
        promptTokensSent: 20_000,
        status: 503,
        headers: { 'x-gateway-reject-reason': 'ttft_unreachable' },
      }),
      rec({ promptTokensSent: 100 }),
      rec({ promptTokensSent: 3000 }),
    ]
    const s = summarizeRun(records, SLOS, 1000)
    expect(s.buckets.map((b) => b.bucket)).toEqual(['0-256', '1k-4k', '16k+'])
    expect(s.buckets.at(-1)).toMatchObject({ offered: 1, good: 0, rejectionRate: 1 })
  })

  it("compares the gateway's predicted TTFT with the measured one", () => {
    const records = [
      rec({ ttftMs: 100, headers: { 'x-gateway-predicted-ttft-ms': '120' } }),
      rec({ ttftMs: 200, headers: { 'x-gateway-predicted-ttft-ms': '150' } }),
      rec({ ttftMs: 300 }),
    ]
    const [p] = summarizeRun(records, SLOS, 1000).predictions
    expect(p).toMatchObject({ class: 'interactive', n: 2, meanSignedErrorMs: -15 })
    expect(p!.absErrorMs.p50).toBe(35)
    expect(p!.absErrorRatio.max).toBe(0.25)
  })
})

const INFO: RunInfo = {
  target: 'http://x',
  model: 'm',
  workload: 'w.yaml',
  seed: 1,
  runTag: 'ab',
  load: 'open loop',
  limit: 'for 1 s',
  startedAt: 'now',
  sent: 2,
  sendingS: 1,
  loopDelay: { p50Ms: 0.1, p99Ms: 1, maxMs: 2, meanMs: 0.2 },
  sendLagMs: [0, 1],
  cpuShare: 0.05,
}

describe('the report', () => {
  it('has the tables per class, reasons, prompt lengths and predictions', () => {
    const records = [rec({ headers: { 'x-gateway-predicted-ttft-ms': '90' } }), rec({ status: 503 })]
    const md = benchMarkdown(INFO, summarizeRun(records, SLOS, 1000), SLOS)
    for (const h of [
      '## Latency by class',
      '## Goodput and SLO attainment by class',
      '## Refusals and failures',
      '## By prompt length',
      "## The gateway's predicted TTFT against the measured",
    ])
      expect(md).toContain(h)
    expect(md).toMatch(/\| interactive \| TTFT 500 ms, TPOT 50 ms \| 2 \| 1 \| 1 \| 50\.0% \| 100\.0% \|/)
    expect(md).toContain('| interactive | refused | http_503 | 1 | 50.0% |')
    expect(md).not.toContain('Warning')
  })

  it("warns when the client's own event loop was late", () => {
    expect(loopWarning({ p50Ms: 1, p99Ms: 25, maxMs: 80, meanMs: 3 })).toContain('late by 25.0 ms at P99')
    expect(loopWarning({ p50Ms: 1, p99Ms: 2, maxMs: 8, meanMs: 1 })).toBe('')
  })
})

describe('the TTFT CDF plot', () => {
  it('draws one curve per class, its objective dashed, on a round axis', () => {
    const svg = ttftCdfSvg([
      { name: 'interactive', values: [10, 20, 30, 40], sloMs: 50 },
      { name: 'batch <flex>', values: [100, 200] },
    ])
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true)
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true)
    expect(svg.match(/<polyline /g)).toHaveLength(2)
    expect(svg.match(/stroke-dasharray/g)).toHaveLength(1)
    expect(svg).toContain('batch &lt;flex&gt; (n=2)')
    // the curve reaches 1 at the largest value
    expect(svg).toMatch(/points="[^"]*,36"/)
    expect([niceCeil(55), niceCeil(220), niceCeil(1000), niceCeil(0.7)]).toEqual([60, 250, 1000, 0.8])
  })
})
