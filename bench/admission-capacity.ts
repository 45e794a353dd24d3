/**
 * The simulator's capacity for the bench's workload, measured on the simulator's own engine
 * (SimEngine, the same scheduler, KV manager and step-time model the served simulator runs) on
 * virtual time: no HTTP, no timers, no CPU contention, deterministic. Seconds of CPU instead of
 * minutes of wall time, which is why the bench measures capacity here rather than with HTTP load.
 *
 * - interactive SLO capacity C: the highest Poisson rate of the interactive stream alone at which
 *   the simulator, served FCFS as it is, still meets both interactive SLOs (TTFT and TPOT) for at
 *   least `attainment` of the requests (bisection on the rate). This is "1×".
 * - saturation throughput of each class alone (a standing backlog, FCFS): requests/s and output
 *   tokens/s while the server's queue never runs dry. Used to say what capacity interactive
 *   leaves to batch.
 */

import { percentile, sorted } from '../src/loadgen/report.js'
import { SimEngine } from '../src/sim/engine.js'
import type { SimProfile, StepTimeModel } from '../src/sim/profile-schema.js'
import { SimRequest, type TokenSink } from '../src/sim/sim-request.js'
import { hashesOf } from './admission-prefix-hashes.js'
import {
  type Arrival,
  type BenchClass,
  classArrivals,
  classSequence,
  type WorkloadSpec,
} from './admission-workload.js'

export interface VirtualOutcome {
  readonly arrival: Arrival
  /** Arrival to first token; with no token by the horizon, arrival to the horizon (censored). */
  readonly ttftMs: number
  readonly censored: boolean
  /** Over the tokens produced by the horizon; NaN with fewer than two. */
  readonly tpotMs: number
  readonly tokens: number
  /** Time of its last token by the horizon (NaN without one). */
  readonly endMs: number
}

interface Progress {
  readonly arrival: Arrival
  first: number
  last: number
  tokens: number
}

/**
 * Serves `arrivals` (model-time ms, sorted) on one engine replica until every request ends, or
 * until `untilMs` (the horizon: later tokens are not seen, later arrivals not sent), and returns
 * every request sent, as far as it got.
 */
export function serveVirtual(
  profile: SimProfile,
  arrivals: readonly Arrival[],
  untilMs = Number.POSITIVE_INFINITY,
): VirtualOutcome[] {
  const engine = new SimEngine({ profile })
  const progress = new Map<string, Progress>()
  const sink: TokenSink = {
    onToken(req) {
      const p = progress.get(req.id) as Progress
      if (req.lastToken > untilMs) return
      if (p.tokens === 0) p.first = req.lastToken
      p.last = req.lastToken
      p.tokens++
    },
  }
  let now = 0
  let i = 0
  while (now <= untilMs) {
    while (i < arrivals.length && arrivals[i]!.atMs <= now && arrivals[i]!.atMs < untilMs) {
      const a = arrivals[i++]!
      const id = `${a.cls}-${a.seq}`
      progress.set(id, { arrival: a, first: Number.NaN, last: Number.NaN, tokens: 0 })
      engine.submit(
        new SimRequest({
          id,
          promptTokens: a.promptTokens,
          targetOutput: a.outputTokens,
          finishReason: 'length',
          blockHashes: hashesOf(profile, a),
          sink,
          arrival: a.atMs,
        }),
      )
    }
    const d = engine.beginStep(now)
    if (d === null) {
      if (i >= arrivals.length || arrivals[i]!.atMs >= untilMs) break
      now = arrivals[i]!.atMs
      continue
    }
    now += d
    engine.finishStep(now)
  }
  return [...progress.values()].map((p) => {
    const at = p.arrival.atMs
    if (p.tokens === 0) {
      const ttftMs = untilMs - at
      return { arrival: p.arrival, ttftMs, censored: true, tpotMs: Number.NaN, tokens: 0, endMs: Number.NaN }
    }
    const tpotMs = p.tokens > 1 ? (p.last - p.first) / (p.tokens - 1) : Number.NaN
    return {
      arrival: p.arrival,
      ttftMs: p.first - at,
      censored: false,
      tpotMs,
      tokens: p.tokens,
      endMs: p.last,
    }
  })
}

export interface Slo {
  readonly ttftMs: number
  readonly tpotMs: number
}

/** Met both SLOs (TPOT over what it streamed by the horizon, like the HTTP runs). */
export function meets(o: VirtualOutcome, slo: Slo): boolean {
  return !o.censored && o.ttftMs <= slo.ttftMs && (o.tokens < 2 || o.tpotMs <= slo.tpotMs)
}

/** Fraction of the requests arriving in [fromMs, toMs) that met both SLOs. */
export function attainment(
  outcomes: readonly VirtualOutcome[],
  slo: Slo,
  fromMs: number,
  toMs: number,
): number {
  const inWindow = outcomes.filter((o) => o.arrival.atMs >= fromMs && o.arrival.atMs < toMs)
  if (inWindow.length === 0) return Number.NaN
  return inWindow.filter((o) => meets(o, slo)).length / inWindow.length
}

export interface SloCapacity {
  readonly ratePerS: number
  /** Attainment measured at that rate. */
  readonly attainment: number
  readonly durationMs: number
  readonly probes: readonly { rate: number; attainment: number }[]
}

/**
 * The highest interactive rate with attainment ≥ target over `durationMs` of arrivals (the first
 * 10% not counted), to within 2%, by bisection between a rate that meets it and one that does not.
 */
export function interactiveSloCapacity(
  profile: SimProfile,
  spec: WorkloadSpec,
  slo: Slo,
  target: number,
  durationMs: number,
): SloCapacity {
  const probes: { rate: number; attainment: number }[] = []
  const probe = (rate: number) => {
    const arr = classArrivals(spec, 'interactive', rate, durationMs)
    const a = attainment(serveVirtual(profile, arr), slo, durationMs * 0.1, durationMs)
    probes.push({ rate, attainment: a })
    return a
  }
  let lo = 1
  let hi = 2
  while (probe(lo) < target && lo > 0.05) lo /= 2
  hi = lo * 2
  while (probe(hi) >= target && hi < 10_000) {
    lo = hi
    hi *= 2
  }
  while (hi / lo > 1.02) {
    const mid = (lo + hi) / 2
    if (probe(mid) >= target) lo = mid
    else hi = mid
  }
  const best = probes.filter((p) => p.rate === lo).at(-1)
  return { ratePerS: lo, attainment: best?.attainment ?? Number.NaN, durationMs, probes }
}

export interface Saturation extends EngineWorkRates {
  /** Mean engine step at saturation, ms: the median TPOT of the requests counted. */
  readonly stepMs: number
  readonly requestsPerS: number
  readonly outputTokensPerS: number
}

/** Token rates the engine's marginal work follows (see engineWorkMsPerS). */
export interface EngineWorkRates {
  readonly promptTokS: number
  /** Output tokens after each request's first: each is one sequence in one decode step. */
  readonly decodeTokS: number
  /** The context (prompt + earlier output) each of those decode steps read for its sequence. */
  readonly decodeContextTokS: number
}

/**
 * Model ms per second of engine work these token rates take, by the profile's step-time model,
 * without each step's base (the weight-read floor that every step pays whatever it carries):
 * prompt tokens at the prefill and context cost, decoded tokens at the per-sequence cost plus
 * their context read. What a class "uses" of the server, comparable across mixes of prompt and
 * output lengths, which prompt tokens alone are not.
 */
export function engineWorkMsPerS(m: StepTimeModel, r: EngineWorkRates): number {
  return (
    r.promptTokS * (m.perPrefillTokenMs + m.perContextTokenMs) +
    r.decodeTokS * m.perDecodeSeqMs +
    r.decodeContextTokS * m.perContextTokenMs
  )
}

/**
 * Throughput of a class alone with a standing backlog of `backlog` requests submitted at t=0,
 * counted between the 20th percentile and the 80th percentile of completion times (the server
 * full and its queue non-empty all along).
 */
export function saturation(
  profile: SimProfile,
  spec: WorkloadSpec,
  cls: BenchClass,
  backlog: number,
): Saturation {
  const arr = classSequence(spec, cls, backlog).map((a) => ({ ...a, atMs: 0 }))
  const out = serveVirtual(profile, arr).sort((a, b) => a.endMs - b.endMs)
  const from = out[Math.floor(out.length * 0.2)]!
  const to = out[Math.floor(out.length * 0.8)]!
  const mid = out.filter((o) => o.endMs > from.endMs && o.endMs <= to.endMs)
  const sec = (to.endMs - from.endMs) / 1000
  let tokens = 0
  let prompt = 0
  let decode = 0
  let context = 0
  for (const { arrival: a } of mid) {
    tokens += a.outputTokens
    prompt += a.promptTokens
    // output tokens 2..n, token i reading prompt + i: the same count as classMetrics' in a window
    const n = a.outputTokens - 1
    decode += n
    context += n * a.promptTokens + (n * (n + 1)) / 2
  }
  return {
    stepMs: percentile(sorted(mid.map((o) => o.tpotMs).filter((t) => Number.isFinite(t))), 50),
    requestsPerS: mid.length / sec,
    outputTokensPerS: tokens / sec,
    promptTokS: prompt / sec,
    decodeTokS: decode / sec,
    decodeContextTokS: context / sec,
  }
}

export interface VirtualLevel {
  readonly offered: number
  readonly attainment: number
  readonly goodputRps: number
  readonly ttftP99Ms: number
  readonly tpotP50Ms: number
}

/**
 * The simulator served directly on virtual time: the given arrivals (both classes or one), judged
 * like the HTTP runs: interactive arrivals in [fromMs, toMs), both SLOs, on what each streamed
 * until the horizon `untilMs`. The reference the HTTP direct runs can be checked against.
 */
export function virtualLevel(
  profile: SimProfile,
  arrivals: readonly Arrival[],
  slo: Slo,
  fromMs: number,
  toMs: number,
  untilMs: number,
): VirtualLevel {
  const out = serveVirtual(profile, arrivals, untilMs).filter(
    (o) => o.arrival.cls === 'interactive' && o.arrival.atMs >= fromMs && o.arrival.atMs < toMs,
  )
  const good = out.filter((o) => meets(o, slo)).length
  return {
    offered: out.length,
    attainment: out.length > 0 ? good / out.length : Number.NaN,
    goodputRps: good / ((toMs - fromMs) / 1000),
    ttftP99Ms: percentile(sorted(out.map((o) => o.ttftMs)), 99),
    tpotP50Ms: percentile(sorted(out.map((o) => o.tpotMs)), 50),
  }
}

/** What the report needs of the simulator's capacity. */
export interface CapacityFacts {
  /** Interactive SLO capacity, requests/s (1×). */
  readonly interactiveRps: number
  /** Saturation of each class alone. */
  readonly interactiveSat: Saturation
  readonly batchSat: Saturation
  /** The simulated engine's step-time model (what a class's work costs). */
  readonly stepTime: StepTimeModel
  /** Interactive's TPOT objective, model ms: the longest mean step a server serving it may run. */
  readonly tpotObjectiveMs: number
}

/** Share of batch saturation's capacity a server has whose steps are held to interactive's TPOT objective. */
export function heldCapacity(cap: CapacityFacts): number {
  const base = cap.stepTime.baseMs
  return (1 - base / cap.tpotObjectiveMs) / (1 - base / cap.batchSat.stepMs)
}

/** The interactive SLO capacity (bisection) and both classes' saturation, on virtual time. */
export function measureCapacity(
  profile: SimProfile,
  spec: WorkloadSpec,
  slo: Slo,
  opts: { readonly attainment: number; readonly probe_s: number; readonly backlog: number },
): { readonly capRun: SloCapacity; readonly cap: CapacityFacts } {
  const capRun = interactiveSloCapacity(profile, spec, slo, opts.attainment, opts.probe_s * 1000)
  const cap: CapacityFacts = {
    interactiveRps: capRun.ratePerS,
    interactiveSat: saturation(profile, spec, 'interactive', opts.backlog),
    batchSat: saturation(profile, spec, 'batch', opts.backlog),
    stepTime: profile.stepTime,
    tpotObjectiveMs: slo.tpotMs,
  }
  return { capRun, cap }
}

export interface ReferenceLevel {
  readonly level: number
  readonly alone: VirtualLevel
  readonly flood: VirtualLevel
}

/**
 * A level's segment served directly on virtual time: interactive alone, and with the flood,
 * judged on its measured window (arrivals after `settleMs`, for `measureMs`) until `untilMs`.
 */
export function referenceLevel(
  profile: SimProfile,
  level: number,
  seg: { readonly arrivals: readonly Arrival[]; readonly settleMs: number; readonly measureMs: number },
  untilMs: number,
  slo: Slo,
): ReferenceLevel {
  const from = seg.settleMs
  const to = from + seg.measureMs
  const alone = seg.arrivals.filter((a) => a.cls === 'interactive')
  return {
    level,
    alone: virtualLevel(profile, alone, slo, from, to, untilMs),
    flood: virtualLevel(profile, seg.arrivals, slo, from, to, untilMs),
  }
}
