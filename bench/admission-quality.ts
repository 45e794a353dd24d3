/**
 * What a load level's interactive requests say about the quality of admission, beyond goodput,
 * all measured at the client (model time): how long refusals took, how many admitted requests
 * were shed from the queue (queue_timeout), what each degrade action did and whether the
 * requests it touched met their SLOs, and the refusal rate by prompt-length bucket (a policy
 * that wins by refusing long prompts shows here).
 */
import { percentile, sorted } from '../src/loadgen/report.js'
import { PROMPT_LENGTH_BUCKETS, promptLengthBucket } from '../src/telemetry/length-buckets.js'
import { arrivedIn, isAdmitted, isRefusal, type Outcome } from './admission-client.js'
import { type ClassSlo, judge } from './admission-metrics.js'
import type { Retried, SegmentResult } from './admission-run.js'

export interface BucketRefusals {
  readonly bucket: string
  readonly offered: number
  readonly refused: number
  readonly rate: number
}

export interface DegradeTally {
  readonly action: string
  readonly count: number
  /** Met the interactive objectives (TTFT and TPOT) they were sent with. */
  readonly metSlo: number
}

/** Refusals sent again after a wait (admission-run.ts Retried), by what became of them. */
export interface RetryTally {
  readonly sent: number
  /** Answered 200. */
  readonly admitted: number
  /** ... and met the interactive objectives (TTFT and TPOT), judged on all they streamed. */
  readonly met: number
  /** Refused once more (429/503, queue_timeout included). */
  readonly refusedAgain: number
}

export interface RetryQuality {
  /** Sent again after the refusal's Retry-After, and after half of it. */
  readonly at: RetryTally
  readonly half: RetryTally
  /** Refusals the spacing allowed a retry for whose Retry-After ran past the level's end: not sent again. */
  readonly beyondLevel: number
  /** The Retry-After of every refusal in the window that had one, model ms (NaN: none). */
  readonly retryAfterP50Ms: number
  readonly retryAfterP90Ms: number
  readonly withRetryAfter: number
}

export interface Quality {
  /**
   * Refusals (429/503) on arrival: send to response headers, model ms. Not queue_timeout, and
   * not the gateway's refusals from its queue (they carry `x-gateway-queue-ms`); a generic
   * proxy's 503 after its own queue timeout counts here, since it does not say it waited.
   */
  readonly refusalP99Ms: number
  /** The same, wall ms (the gateway's own decision time is not slowed by the time scale). */
  readonly refusalP99WallMs: number
  /**
   * Their p50 and p90, wall ms: with a few dozen refusals in a window the p99 is about their
   * slowest one, so these say whether it was one outlier or the run of them.
   */
  readonly refusalP50WallMs: number
  readonly refusalP90WallMs: number
  readonly refusals: number
  /**
   * Where a refusal on arrival's wait went, wall ms (NaN without the figures): the gateway's own
   * share (its `server-timing`), p99; the wait from the request's write to an already open
   * connection to the response headers, p99 (the client's dispatch and connect left out); and
   * how many of them waited for a new connection first, and their whole wait p99 (a new
   * connection is accepted in one turn of the gateway's loop and read in the next).
   */
  readonly refusalGatewayP99WallMs: number
  readonly refusalOpenP99WallMs: number
  readonly refusalsOnNewConnection: number
  readonly refusalNewConnectionP99WallMs: number
  /** Refused from the gateway's queue before their deadline (early refusal): count and wait p99, model ms. */
  readonly queueRefusals: number
  readonly queueRefusalP99Ms: number
  /** queueRefusals ÷ (admitted + queue_timeout + queueRefusals): those that were queued, then refused. */
  readonly queueRefusalShare: number
  /** Every refusal, queue_timeout and the proxies' own 503s included, model ms. */
  readonly anyRefusalP99Ms: number
  readonly queueTimeouts: number
  /** queue_timeout ÷ (admitted + queue_timeout): the admitted requests that were shed later. */
  readonly queueTimeoutShare: number
  readonly degraded: readonly DegradeTally[]
  readonly buckets: readonly BucketRefusals[]
  readonly retries: RetryQuality
}

/** Interactive requests judged in the segment's window (arrivals in it). */
export function judgedInteractive(seg: SegmentResult): Outcome[] {
  const w = seg.window
  return seg.outcomes.filter((o) => o.arrival.cls === 'interactive' && arrivedIn(o, w))
}

function quantile(values: number[], p: number): number {
  return values.length === 0 ? Number.NaN : percentile(sorted(values), p)
}

function p99(values: number[]): number {
  return quantile(values, 99)
}

export function bucketRefusals(judged: readonly Outcome[]): BucketRefusals[] {
  const out: BucketRefusals[] = []
  for (const b of PROMPT_LENGTH_BUCKETS) {
    const inBucket = judged.filter((o) => promptLengthBucket(o.arrival.promptTokens) === b.label)
    if (inBucket.length === 0) continue
    const n = inBucket.filter(isRefusal).length
    out.push({ bucket: b.label, offered: inBucket.length, refused: n, rate: n / inBucket.length })
  }
  return out
}

/** The longest bucket's refusal rate ÷ the shortest's (NaN with fewer than two buckets). */
export function longestVsShortest(buckets: readonly BucketRefusals[]): { ratio: number; text: string } {
  const first = buckets[0]
  const last = buckets[buckets.length - 1]
  if (first === undefined || last === undefined || buckets.length < 2)
    return { ratio: Number.NaN, text: 'n/a' }
  // neither refused anything: equal; only the longest refused: unbounded
  const ratio =
    last.rate === 0
      ? first.rate === 0
        ? 1
        : 0
      : first.rate === 0
        ? Number.POSITIVE_INFINITY
        : last.rate / first.rate
  // with the counts: a bucket of a few requests moves the ratio by a lot from run to run
  const pc = (b: BucketRefusals) => `${(b.rate * 100).toFixed(1)}% (${b.refused}/${b.offered})`
  return { ratio, text: `${last.bucket} ${pc(last)} vs ${first.bucket} ${pc(first)}` }
}

export function retryQuality(seg: SegmentResult, slo: ClassSlo, scale: number): RetryQuality {
  const tally = (arm: Retried['arm']): RetryTally => {
    const mine = seg.retries.filter((r) => r.arm === arm).map((r) => r.outcome)
    const admitted = mine.filter((o) => o.status === 200)
    return {
      sent: mine.length,
      admitted: admitted.length,
      // a retry is judged on all it streamed until the run's cut-off, not at its level's horizon
      met: admitted.filter((o) => judge(o, slo, scale, Number.POSITIVE_INFINITY).good).length,
      refusedAgain: mine.filter(isRefusal).length,
    }
  }
  const waits = sorted(
    judgedInteractive(seg).flatMap((o) =>
      isRefusal(o) && o.retryAfterMs !== undefined ? [o.retryAfterMs / scale] : [],
    ),
  )
  return {
    at: tally('at'),
    half: tally('half'),
    beyondLevel: seg.retryBeyondLevel,
    retryAfterP50Ms: waits.length === 0 ? Number.NaN : percentile(waits, 50),
    retryAfterP90Ms: waits.length === 0 ? Number.NaN : percentile(waits, 90),
    withRetryAfter: waits.length,
  }
}

export function quality(seg: SegmentResult, slo: ClassSlo, scale: number): Quality {
  const judged = judgedInteractive(seg)
  const until = seg.window.judgeUntilMs * scale
  const latency = (o: Outcome) => ((o.headersMs ?? o.sentMs) - o.sentMs) / scale
  const refusals = judged.filter(isRefusal)
  const early = refusals.filter((o) => o.rejectReason !== 'queue_timeout')
  const queueTimeouts = refusals.length - early.length
  const atArrival = early.filter((o) => o.queueMs === undefined)
  const onNew = atArrival.filter((o) => o.newConnection === true)
  const fromQueue = early.filter((o) => o.queueMs !== undefined)
  const admitted = judged.filter(isAdmitted)
  const tally = new Map<string, { count: number; metSlo: number }>()
  for (const o of admitted) {
    if (o.degraded === undefined) continue
    const good = judge(o, slo, scale, until).good
    for (const action of o.degraded.split(',')) {
      const t = tally.get(action) ?? { count: 0, metSlo: 0 }
      t.count++
      if (good) t.metSlo++
      tally.set(action, t)
    }
  }
  const sheddable = admitted.length + queueTimeouts
  const queued = sheddable + fromQueue.length
  const refusalWallMs = atArrival.map((o) => latency(o) * scale)
  return {
    refusalP99Ms: p99(atArrival.map(latency)),
    refusalP99WallMs: p99(refusalWallMs),
    refusalP50WallMs: quantile(refusalWallMs, 50),
    refusalP90WallMs: quantile(refusalWallMs, 90),
    refusals: atArrival.length,
    refusalGatewayP99WallMs: p99(atArrival.flatMap((o) => (o.gatewayMs === undefined ? [] : [o.gatewayMs]))),
    refusalOpenP99WallMs: p99(
      atArrival.flatMap((o) =>
        o.newConnection === false && o.writtenMs !== undefined && o.headersMs !== undefined
          ? [o.headersMs - o.writtenMs]
          : [],
      ),
    ),
    refusalsOnNewConnection: onNew.length,
    refusalNewConnectionP99WallMs: p99(onNew.map((o) => latency(o) * scale)),
    queueRefusals: fromQueue.length,
    queueRefusalP99Ms: p99(fromQueue.map(latency)),
    queueRefusalShare: queued > 0 ? fromQueue.length / queued : Number.NaN,
    anyRefusalP99Ms: p99(refusals.map(latency)),
    queueTimeouts,
    queueTimeoutShare: sheddable > 0 ? queueTimeouts / sheddable : Number.NaN,
    degraded: [...tally.entries()].map(([action, t]) => ({ action, ...t })),
    buckets: bucketRefusals(judged),
    retries: retryQuality(seg, slo, scale),
  }
}
