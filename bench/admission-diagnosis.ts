/**
 * The admission report's second half: the direct reference on virtual time, the gateway's
 * estimator and queues during its run, and the facts that explain the misses.
 */

import { fmt, type Report } from '../src/loadgen/report.js'
import type { StepTimeModel } from '../src/sim/profile-schema.js'
import type { CapacityFacts, ReferenceLevel } from './admission-capacity.js'
import { type LevelResult, ms, pct, reasons } from './admission-report.js'

/** The direct path on the simulator's engine, virtual time: interactive alone, and with the flood. */
export function referenceSection(report: Report, ref: readonly ReferenceLevel[], cap: CapacityFacts): void {
  report.heading("Reference: the simulator directly, on its engine's virtual time")
  report.paragraph(
    'The same segments (same arrivals, same measured window, judged at the same horizon, censored TTFTs ' +
      'included) served by `SimEngine` without HTTP, timers or CPU noise. "Interactive alone" drops the batch flood: ' +
      `the classic overload curve of a FCFS server (capacity ${fmt(cap.interactiveRps, 2)} req/s). "With the flood" ` +
      'is what the direct HTTP runs measure, as a check on them.',
  )
  report.table(
    [
      'load',
      'alone: attainment',
      'alone: goodput req/s',
      'alone: TTFT p99 ms',
      'alone: TPOT p50 ms',
      'flood: attainment',
      'flood: goodput req/s',
      'flood: TTFT p99 ms',
      'flood: TPOT p50 ms',
    ],
    ref.map((r) => [
      `${r.level}×`,
      pct(r.alone.attainment),
      fmt(r.alone.goodputRps),
      fmt(r.alone.ttftP99Ms, 0),
      fmt(r.alone.tpotP50Ms, 1),
      pct(r.flood.attainment),
      fmt(r.flood.goodputRps),
      fmt(r.flood.ttftP99Ms, 0),
      fmt(r.flood.tpotP50Ms, 1),
    ]),
  )
}

/** How the gateway's estimator and queues moved during the gateway run, window by window. */
export function estimatorSection(
  report: Report,
  levels: readonly LevelResult[],
  scale: number,
  truth: StepTimeModel,
): void {
  const rows: (string | number)[][] = []
  for (const l of levels) {
    const r = l.runs.gateway
    if (r === undefined) continue
    for (const [when, snap] of [
      ['start', r.snapshots.start],
      ['end', r.snapshots.end],
    ] as const) {
      const e = snap.estimator
      const q = snap.queues
      rows.push([
        `${l.level}× ${when}`,
        e === undefined ? '' : fmt(e.dispatchTokensPerMs * scale, 1),
        e === undefined ? '' : fmt(e.alphaMs / scale, 0),
        e === undefined ? '' : fmt((e.betaMsPerToken / scale) * 1000, 1),
        e === undefined ? '' : fmt(e.gammaSteps, 2),
        e === undefined ? '' : fmt(e.deltaResidual, 2),
        snap.itlMs === undefined || snap.itlMs === null ? '' : fmt(snap.itlMs / scale, 1),
        e === undefined ? '' : e.samples,
        e === undefined ? '' : pct(e.meanAbsRelativeError),
        snap.margin === undefined ? '' : pct(snap.margin),
        snap.tpotMargin === undefined ? '' : pct(snap.tpotMargin),
        snap.batchBelowMargin === undefined ? '' : pct(snap.batchBelowMargin),
        q?.interactive === undefined ? '' : `${q.interactive.queued}/${q.interactive.inflight}`,
        q?.batch === undefined ? '' : `${q.batch.queued}/${q.batch.inflight}`,
      ])
    }
  }
  if (rows.length === 0) return
  report.heading("The gateway's estimator and queues during the run")
  report.paragraph(
    'From /admin/state at the start and end of each measured window, converted to model time: ' +
      'TTFT ≈ queue wait + server time; queue wait = 0 when the request can go at once, else ' +
      "W, its forecast wait (the endpoints' next steps played forward by their step models, with the " +
      "prefill budget and the decode guard's mean); server time = α + β · prompt tokens in its step (those sent " +
      'with it, and its own to compute) + γ · a decode step (step model) + δ · the time left in the step in progress ' +
      'when it is sent. D, the measured dispatch rate, prices Retry-After. One estimator per pool; the server part is ' +
      "fitted (recursive least squares) to every streamed request's dispatch-to-first-token time, the wait is " +
      'the forecast as it is. S (ITL) is the live inter-token latency the decode guard measures. For this profile ' +
      `a pure prefill costs β = ${fmt((truth.perPrefillTokenMs + truth.perContextTokenMs) * 1000, 1)} µs per token. ` +
      'Interactive is admitted when its prediction is within its SLO × ' +
      '(1 − its TTFT margin): 10% at least, widened while more than 0.5% of the admitted miss the SLO; ' +
      "it may add to the server's batch while the live ITL is within its TPOT SLO × (1 − its TPOT margin), " +
      'learned the same way from the TPOT of its admitted streams; batch, while interactive arrives, within ' +
      "its objective below interactive's (TPOT SLO × (1 − admission.decode_headroom_below)) × (1 − its own " +
      'margin, learned from its streams).',
  )
  report.table(
    [
      'window',
      'D tok/ms',
      'α ms',
      'β µs/token',
      'γ',
      'δ',
      'S (ITL) ms',
      'samples',
      "gateway's own mean |error|",
      'interactive TTFT margin',
      'interactive TPOT margin',
      "batch's TPOT margin below interactive",
      'interactive queued/in flight',
      'batch queued/in flight',
    ],
    rows,
  )
}

/** Facts that explain the misses, derived from the measurements (no guesses). */
export function diagnosisSection(
  report: Report,
  levels: readonly LevelResult[],
  slo: { ttftMs: number; tpotMs: number },
  scale: number,
): void {
  const lines: string[] = []
  for (const l of levels) {
    const r = l.runs.gateway
    if (r === undefined) continue
    const i = r.perClass.interactive
    const b = r.perClass.batch
    const e = r.snapshots.start.estimator
    const q = r.snapshots.end.queues
    const name = `${l.level}×`
    if (i.offered > 0 && i.admitted === 0) {
      lines.push(
        `- **${name}: interactive locked out.** All ${i.offered} interactive requests were refused ` +
          `(${reasons(i)}) while batch streamed ${fmt(b.throughputTokS, 0)} tok/s` +
          (e === undefined
            ? '.'
            : `; at the window's start the estimator read ` +
              `α = ${fmt(e.alphaMs / scale, 0)} ms, γ = ${fmt(e.gammaSteps, 2)} steps (model time) after ${e.samples} ` +
              'samples, so every interactive prediction exceeded the budget; refused requests teach ' +
              'the estimator nothing (only probes do).'),
      )
      continue
    }
    if (i.admitted > 0 && i.ttftGood / i.admitted >= 0.9 && i.attainmentAdmitted < 0.9) {
      lines.push(
        `- **${name}: TTFT held, TPOT not.** ${pct(i.ttftGood / i.admitted)} of admitted interactive met the TTFT SLO, ` +
          `${pct(i.attainmentAdmitted)} met TTFT and TPOT (${i.openStreaming} of ${i.admitted} judged on their TPOT so far, ` +
          `still streaming at the horizon; ${pct(i.attainmentAdmittedAtEnd)} with each stream judged at its end): ` +
          `TPOT p50 ${fmt(i.tpot.p50, 0)} ms against ${slo.tpotMs} ms ` +
          `(engine steps made long by prefill chunks in the same step and by the running batch: ` +
          `interactive/batch in flight at the window's end ${q?.interactive?.inflight ?? '?'}/${q?.batch?.inflight ?? '?'}). ` +
          'The decode guard holds dispatch while the live ITL is over the objective; a request already ' +
          'streaming keeps the steps it gets.',
      )
    }
    if (i.admitted > 0 && i.ttft.p99 > slo.ttftMs) {
      lines.push(
        `- **${name}: admitted interactive above the TTFT SLO at p99** (${ms(i.ttft, 'p99')} ms; ` +
          `${i.admitted - i.ttftGood} of ${i.admitted} missed it); estimator median signed error ` +
          `${pct(i.estimator.medianSigned)} (negative: it predicted too low).`,
      )
    }
    const zeros = i.estimator.signed.filter((v) => v === -1).length
    if (zeros > 0)
      lines.push(`- **${name}: ${zeros} of ${i.estimator.count} interactive predictions were 0 ms.**`)
  }
  if (lines.length === 0) return
  report.heading('Diagnosis (facts behind the misses)')
  report.paragraph(lines.join('\n'))
}

interface FactJson {
  readonly value: number
  readonly source: string
}

/**
 * What the gateway learned of the engine, from its /admin/state at the end of its run
 * (engine facts and prefill budget per endpoint), in model time, beside the profile's own
 * step model: the check that learning from the time-scaled engine is honest.
 */
export function engineFactsSection(
  report: Report,
  after: unknown,
  scale: number,
  truth: StepTimeModel,
): void {
  const s = after as
    | {
        admission?: {
          pools?: {
            engineFacts?: Record<string, Record<string, FactJson | null> | null>
            prefillBudget?: Record<string, { tokens: number; bound: string; source: string }>
          }[]
        }
      }
    | undefined
  const pool = s?.admission?.pools?.[0]
  const facts = Object.entries(pool?.engineFacts ?? {})
  if (facts.length === 0) return
  const show = (f: FactJson | null | undefined, k: number, digits: number) =>
    f === undefined || f === null ? '–' : `${fmt(f.value * k, digits)} (${f.source.replace('_', ' ')})`
  report.heading('Engine facts learned (gateway /admin/state, end of its run)', 3)
  report.paragraph(
    `Model time (step ÷ ${scale}, rates × ${scale}). The profile: step ${fmt(truth.baseMs, 1)} ms, prefill ` +
      `${fmt(1000 / (truth.perPrefillTokenMs + truth.perContextTokenMs), 0)} tokens/s.`,
  )
  report.table(
    ['endpoint', 'step ms', 'prefill tokens/s', 'step budget tokens', 'prefill budget tokens', 'samples'],
    facts.map(([name, f]) => {
      const b = pool?.prefillBudget?.[name]
      const samples = f as { prefillSamples?: number; stepWindows?: number } | null
      return [
        name,
        show(f?.stepMs, 1 / scale, 2),
        show(f?.prefillTokensPerS, scale, 0),
        show(f?.stepTokens, 1, 0),
        b === undefined
          ? '–'
          : `${fmt(b.tokens, 0)} (${b.bound.replace('_', ' ')}, ${b.source.replace('_', ' ')})`,
        `${samples?.prefillSamples ?? 0} prefills, ${samples?.stepWindows ?? 0} ITL windows`,
      ]
    }),
  )
}

/** The estimator's calibration from /admin/state before and after the gateway run, as JSON. */
export function calibrationSection(report: Report, before: unknown, after: unknown): void {
  const of = (state: unknown) => {
    const s = state as
      | {
          admission?: {
            pools?: {
              estimator?: unknown
              engineSteps?: unknown
              ttftMargin?: unknown
              tpotMargin?: unknown
              ttftReserveTokens?: unknown
            }[]
            charsPerToken?: unknown
          }
        }
      | undefined
    const pool = s?.admission?.pools?.[0]
    return {
      estimator: pool?.estimator,
      engineSteps: pool?.engineSteps,
      charsPerToken: s?.admission?.charsPerToken,
      ttftMargin: pool?.ttftMargin,
      tpotMargin: pool?.tpotMargin,
      ttftReserveTokens: pool?.ttftReserveTokens,
    }
  }
  report.heading('Estimator calibration (gateway /admin/state)')
  report.paragraph(
    [
      'Before the gateway run (the shipped priors, unscaled: nothing is configured):',
      '```json',
      JSON.stringify(of(before)),
      '```',
      'At the end:',
      '```json',
      JSON.stringify(of(after)),
      '```',
      "α is in wall ms (× time scale), β in wall ms per prompt token, D in prompt tokens per wall ms; engineSteps' step model in wall ms.",
    ].join('\n'),
  )
}
