import { describe, expect, it } from 'vitest'
import type { Outcome } from '../admission-client.js'
import { bestHaproxy, haproxyKey, ratioToBest } from '../admission-compare.js'
import { classMetrics, estimatorError, type SegmentMetrics } from '../admission-metrics.js'
import { longestVsShortest, quality } from '../admission-quality.js'
import type { LevelResult } from '../admission-report.js'
import type { SegmentResult } from '../admission-run.js'
import { retriesInAll, targetRows, type WorkloadOutcome } from '../admission-targets.js'

/** Only what the comparison reads of a run. */
const metrics = (goodputRps: number, attainmentAdmitted = 1, admitted = 10) =>
  ({
    perClass: { interactive: { goodputRps, goodputTokS: goodputRps * 100, attainmentAdmitted, admitted } },
  }) as unknown as SegmentMetrics

const levelOf = (level: number, runs: Record<string, number>): LevelResult => ({
  level,
  interactiveRate: level * 10,
  batchRate: 0,
  runs: Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, metrics(v)])),
  quality: {},
})

describe('best HAProxy and the ratio', () => {
  it('picks the maxconn with the most goodput, per level, and ignores the other paths', () => {
    const l = levelOf(2, {
      direct: 9,
      [haproxyKey(2)]: 3,
      [haproxyKey(8)]: 5,
      [haproxyKey(16)]: 4,
      gateway: 7.5,
    })
    expect(bestHaproxy(l.runs)?.key).toBe('haproxy-8')
    expect(ratioToBest(l)).toBeCloseTo(1.5, 9)
    // ties go to the first (smallest) maxconn
    expect(bestHaproxy(levelOf(1, { [haproxyKey(2)]: 3, [haproxyKey(4)]: 3 }).runs)?.key).toBe('haproxy-2')
    expect(ratioToBest(levelOf(4, { [haproxyKey(2)]: 0, gateway: 2 }))).toBe(Number.POSITIVE_INFINITY)
    expect(ratioToBest(levelOf(4, { gateway: 2 }))).toBeNaN()
  })
})

describe("issue 14's targets", () => {
  const outcome = (levels: LevelResult[], coldP90: number): WorkloadOutcome => ({
    name: 'w',
    levels,
    cold: estimatorError([coldP90, -coldP90]),
    steady: estimatorError([0.1, -0.1, 0.2]),
    lengthAware: false,
  })

  it('asks 1.5× at 4×, 1.2× at 2× and 1× below, and says hit or missed with the figure', () => {
    const rows = targetRows(
      outcome(
        [
          levelOf(1, { [haproxyKey(4)]: 10, gateway: 10 }),
          levelOf(2, { [haproxyKey(4)]: 10, gateway: 11.9 }),
          levelOf(4, { [haproxyKey(4)]: 4, gateway: 6 }),
        ],
        0.7,
      ),
    )
    const verdict = (prefix: string) => rows.find((r) => r.target.startsWith(prefix))
    expect(verdict('1×: goodput ≥ 1× best')?.hit).toBe(true)
    expect(verdict('2×: goodput ≥ 1.2× best')?.hit).toBe(false)
    expect(verdict('2×: goodput ≥ 1.2× best')?.figure).toContain('1.19×')
    expect(verdict('4×: goodput ≥ 1.5× best')?.hit).toBe(true)
    // steady: p50 10%, p90 ~20% (both within); cold: p90 70% (> 60%)
    expect(verdict('estimator at the client, steady')?.hit).toBe(true)
    expect(verdict('estimator at the client, cold')?.hit).toBe(false)
    const wide = targetRows({ ...outcome([], 0.5), steady: estimatorError([0.3, -0.3, 0.1]) })
    expect(wide.find((r) => r.target.startsWith('estimator at the client, steady'))?.hit).toBe(false)
    expect(wide.find((r) => r.target.startsWith('estimator at the client, cold'))?.hit).toBe(true)
  })
})

describe('goodput per second of the measured window', () => {
  it('is the same on every path for the same good requests, whatever came before the window', () => {
    // a level's window of 40 requests at 2.72 req/s, after HAProxy's 1 s warm-up and after the
    // gateway's 30 s cold start: (from + m) - from is not m in the last bits, and equal counts
    // divided by it gave 0.9999999999999998 of each other: a tie judged missed
    const m = 14706.15268663027
    const goodputAfter = (leadMs: number) => {
      const fromMs = leadMs + 1000
      const outcomes = Array.from({ length: 49 }, (_, i) => ({
        arrival: {
          seq: i,
          cls: 'interactive' as const,
          atMs: fromMs + i * 100,
          promptTokens: 100,
          outputTokens: 3,
        },
        dueMs: 0,
        sentMs: fromMs + i * 100,
        status: 200,
        tokenMs: [fromMs + i * 100 + 50, fromMs + i * 100 + 60],
        cut: false,
        done: true,
      }))
      const seg = {
        window: { fromMs, toMs: fromMs + m, spanMs: m, judgeUntilMs: fromMs + m + 500 },
        outcomes,
      } as unknown as SegmentResult
      return classMetrics(seg, outcomes, 'interactive', { ttftMs: 500, tpotMs: 50 }, 1).goodputRps
    }
    expect(1000 + 1000 + m - (1000 + 1000)).not.toBe(30_000 + 1000 + m - (30_000 + 1000))
    const haproxy = goodputAfter(1000)
    expect(haproxy).toBeCloseTo(49 / (m / 1000), 9)
    expect(goodputAfter(30_000)).toBe(haproxy)
    const rows = targetRows({
      name: 'w',
      levels: [levelOf(0.5, { [haproxyKey(16)]: haproxy, gateway: goodputAfter(30_000) })],
      cold: estimatorError([]),
      steady: estimatorError([]),
    } as unknown as WorkloadOutcome)
    expect(rows.find((r) => r.target.startsWith('0.5×: goodput'))?.hit).toBe(true)
  })
})

const arrival = (seq: number, promptTokens: number) => ({
  seq,
  cls: 'interactive' as const,
  atMs: 100 + seq,
  promptTokens,
  outputTokens: 3,
})

function outcome(seq: number, promptTokens: number, o: Partial<Outcome>): Outcome {
  return {
    arrival: arrival(seq, promptTokens),
    dueMs: 0,
    sentMs: 200,
    status: 200,
    tokenMs: [],
    cut: false,
    done: true,
    ...o,
  }
}

describe('admission quality at the client', () => {
  const outcomes: Outcome[] = [
    // refused at arrival in 1 and 3 wall ms; shed after 400 ms; refused from the queue after 100 ms
    outcome(0, 100, {
      status: 503,
      headersMs: 201,
      rejectReason: 'ttft_slo',
      writtenMs: 200.5,
      newConnection: false,
      gatewayMs: 0.2,
    }),
    outcome(1, 5000, {
      status: 503,
      headersMs: 203,
      rejectReason: 'ttft_slo',
      writtenMs: 202.5,
      newConnection: true,
      gatewayMs: 0.4,
    }),
    outcome(2, 5000, { status: 503, headersMs: 600, rejectReason: 'queue_timeout', queueMs: 400 }),
    outcome(6, 5000, { status: 503, headersMs: 400, rejectReason: 'ttft_slo', queueMs: 100 }),
    // admitted: one good (TTFT 100, TPOT 10), one degraded and good, one degraded and late
    outcome(3, 100, { tokenMs: [300, 310, 320] }),
    outcome(4, 100, { tokenMs: [300, 310, 320], degraded: 'cap_max_tokens' }),
    outcome(5, 5000, { tokenMs: [1500, 1510, 1520], degraded: 'cap_max_tokens' }),
  ]
  const seg = {
    segment: { name: '2×', measured: true, settleMs: 0, measureMs: 1000, tailMs: 1000, arrivals: [] },
    window: { fromMs: 0, toMs: 1000, judgeUntilMs: 2000 },
    outcomes,
    retries: [],
    retryBeyondLevel: 0,
  } as unknown as SegmentResult

  it('times refusals, counts queue_timeout against the admitted, and tallies degrade actions', () => {
    const q = quality(seg, { ttftMs: 500, tpotMs: 50 }, 2)
    expect(q.refusals).toBe(2)
    // p99 of 1 and 3 wall ms (interpolated), model ms = wall / scale
    expect(q.refusalP99WallMs).toBeCloseTo(2.98, 9)
    expect(q.refusalP50WallMs).toBeCloseTo(2, 9)
    expect(q.refusalP90WallMs).toBeCloseTo(2.8, 9)
    expect(q.refusalP99Ms).toBeCloseTo(1.49, 9)
    // apart: the gateway's own share, and the wait on an open connection from the write on
    expect(q.refusalGatewayP99WallMs).toBeCloseTo(0.398, 9)
    expect(q.refusalOpenP99WallMs).toBeCloseTo(0.5, 9) // the one on a new connection left out
    expect(q.refusalsOnNewConnection).toBe(1)
    expect(q.anyRefusalP99Ms).toBeGreaterThan(190)
    expect(q.anyRefusalP99Ms).toBeLessThanOrEqual(200)
    expect(q.queueTimeouts).toBe(1)
    expect(q.queueTimeoutShare).toBeCloseTo(1 / 4, 9)
    // the one refused from the queue: apart from those on arrival, a share of the queued
    expect(q.queueRefusals).toBe(1)
    expect(q.queueRefusalP99Ms).toBeCloseTo(100, 9)
    expect(q.queueRefusalShare).toBeCloseTo(1 / 5, 9)
    expect(q.degraded).toEqual([{ action: 'cap_max_tokens', count: 2, metSlo: 1 }])
    expect(q.buckets.map((b) => [b.bucket, b.offered, b.refused])).toEqual([
      ['0-256', 3, 1],
      ['4k-16k', 4, 3],
    ])
    const { ratio, text } = longestVsShortest(q.buckets)
    expect(ratio).toBeCloseTo(2.25, 9)
    expect(text).toBe('4k-16k 75.0% (3/4) vs 0-256 33.3% (1/3)')
  })

  it("tallies the refusals sent again after their Retry-After and after half of it, and the waits' spread", () => {
    const refusedWith = (seq: number, retryAfterMs: number) =>
      outcome(seq, 100, { status: 503, headersMs: 201, rejectReason: 'ttft_slo', retryAfterMs })
    const withRetries = {
      ...seg,
      outcomes: [refusedWith(10, 100), refusedWith(11, 300), refusedWith(12, 500), ...outcomes],
      retries: [
        // after its wait: admitted and in time (TTFT 50 ms model); refused again
        { arm: 'at', retryAfterMs: 100, outcome: outcome(10, 100, { sentMs: 400, tokenMs: [500, 510] }) },
        { arm: 'at', retryAfterMs: 300, outcome: outcome(11, 100, { sentMs: 600, status: 503 }) },
        // after half of it: admitted, but its first token came 1,200 ms later (model)
        { arm: 'half', retryAfterMs: 500, outcome: outcome(12, 100, { sentMs: 500, tokenMs: [2900, 2910] }) },
      ],
      retryBeyondLevel: 2,
    } as unknown as SegmentResult
    const r = quality(withRetries, { ttftMs: 500, tpotMs: 50 }, 2).retries
    expect(r.at).toEqual({ sent: 2, admitted: 1, met: 1, refusedAgain: 1 })
    expect(r.half).toEqual({ sent: 1, admitted: 1, met: 0, refusedAgain: 0 })
    expect(r.beyondLevel).toBe(2)
    // the waits of the three refusals that carried one, in model ms (wall / 2)
    expect(r.withRetryAfter).toBe(3)
    expect(r.retryAfterP50Ms).toBeCloseTo(150, 9)
    expect(quality(seg, { ttftMs: 500, tpotMs: 50 }, 2).retries.withRetryAfter).toBe(0)
  })

  it('judges a length-aware objective by the prompt: a long prompt gets its allowance', () => {
    const q = quality(seg, { ttftMs: 500, ttftPer1kMs: 100, tpotMs: 50 }, 2)
    // request 5: TTFT (1500 - 200) / 2 = 650 ms model: late against 500, in time against 500 + 5 × 100
    const late = quality(seg, { ttftMs: 100, tpotMs: 50 }, 4)
    const aware = quality(seg, { ttftMs: 100, ttftPer1kMs: 100, tpotMs: 50 }, 4)
    expect(q.degraded[0]?.metSlo).toBe(2)
    expect(late.degraded[0]?.metSlo).toBe(1)
    expect(aware.degraded[0]?.metSlo).toBe(2)
  })
})

describe('Retry-After in the targets section', () => {
  it('sums every workload’s retries at 2× and 4× by arm (1× left out)', () => {
    const tally = (sent: number, admitted: number, met: number) => ({
      sent,
      admitted,
      met,
      refusedAgain: sent - admitted,
    })
    const withRetries = (
      level: number,
      at: ReturnType<typeof tally>,
      half: ReturnType<typeof tally>,
    ): LevelResult => ({
      ...levelOf(level, { gateway: 1 }),
      quality: { gateway: { retries: { at, half } } } as unknown as LevelResult['quality'],
    })
    const w = (name: string, levels: LevelResult[]): WorkloadOutcome => ({
      name,
      levels,
      cold: estimatorError([]),
      steady: estimatorError([]),
      lengthAware: false,
    })
    const all = retriesInAll([
      w('a', [
        withRetries(1, tally(9, 9, 9), tally(9, 9, 9)),
        withRetries(2, tally(3, 3, 2), tally(3, 1, 1)),
      ]),
      w('b', [withRetries(4, tally(4, 1, 1), tally(4, 0, 0))]),
    ])
    expect(all.at).toEqual({ sent: 7, admitted: 4, met: 3, refusedAgain: 3 })
    expect(all.half).toEqual({ sent: 7, admitted: 1, met: 1, refusedAgain: 6 })
  })
})
