/**
 * The capacity a sweep's multiples are of, when --capacity is not given: the target's
 * saturation throughput, measured by a closed-loop ramp. Concurrency starts at 1 and doubles
 * each step (each `stepS` long). A step's throughput is by Little's law for a closed loop
 * (no think time): requests/s = concurrency / mean latency, times the share that succeeded;
 * steadier on a short step than counting the few answers that end in it. The ramp stops when a step gains less than `minGain` (10%) over the best so far,
 * when more than `maxRefused` (10%) of a step's requests were refused (the target sheds load:
 * it is full), or at `maxConcurrency`. The capacity is the best throughput seen.
 *
 * This is throughput at saturation, regardless of latency: an upper bound on goodput, and the
 * natural "1×" of an offered-load sweep. For the rate within SLO, use --find-max-goodput.
 */
import type { BenchSession } from './bench-session.js'
import { outcomeOf } from './bench-summary.js'

export interface ProbeStep {
  readonly concurrency: number
  /** Successful requests per second: concurrency / mean latency × ok share. */
  readonly throughput: number
  /** Refused / sent in the step. */
  readonly refusedShare: number
}

export interface RampOptions {
  readonly minGain?: number
  readonly maxRefused?: number
  readonly maxConcurrency?: number
  readonly onStep?: (s: ProbeStep, gain: number) => void
}

export interface CapacityResult {
  /** Requests/s (0 when nothing succeeded). */
  readonly capacity: number
  /** The concurrency it was reached at. */
  readonly concurrency: number
  readonly steps: readonly ProbeStep[]
  readonly stop: 'plateau' | 'refusing' | 'max-concurrency'
}

/** The ramp, on any step function (a closed-loop run in the bench, a fake in tests). */
export async function rampCapacity(
  step: (concurrency: number) => Promise<ProbeStep>,
  o: RampOptions = {},
): Promise<CapacityResult> {
  const minGain = o.minGain ?? 0.1
  const maxRefused = o.maxRefused ?? 0.1
  const maxConcurrency = o.maxConcurrency ?? 1024
  const steps: ProbeStep[] = []
  let best: ProbeStep | undefined
  for (let c = 1; ; c *= 2) {
    const s = await step(c)
    steps.push(s)
    const gain =
      best === undefined || best.throughput === 0
        ? Number.POSITIVE_INFINITY
        : s.throughput / best.throughput - 1
    o.onStep?.(s, gain)
    const prior = best
    if (best === undefined || s.throughput > best.throughput) best = s
    const result = (stop: CapacityResult['stop']): CapacityResult => ({
      capacity: best?.throughput ?? 0,
      concurrency: best?.concurrency ?? c,
      steps,
      stop,
    })
    if (s.refusedShare > maxRefused) return result('refusing')
    if (prior !== undefined && gain < minGain) return result('plateau')
    if (c * 2 > maxConcurrency) return result('max-concurrency')
  }
}

/** One closed-loop step against a session. */
export async function probeStep(
  session: BenchSession,
  concurrency: number,
  stepS: number,
): Promise<ProbeStep> {
  const { result } = await session.run({ mode: { concurrency }, durationS: stepS })
  const n = result.records.length
  const meanS = result.records.reduce((t, r) => t + r.latencyMs, 0) / 1000 / Math.max(1, n)
  const ok = result.records.filter((r) => outcomeOf(r) === 'ok').length
  const refused = result.records.filter((r) => outcomeOf(r) === 'refused').length
  return {
    concurrency,
    throughput: n === 0 || !(meanS > 0) ? 0 : (concurrency / meanS) * (ok / n),
    refusedShare: n === 0 ? 0 : refused / n,
  }
}

/** The ramp against a session, a line per step to `log`. */
export function measureCapacity(
  session: BenchSession,
  stepS: number,
  log?: (line: string) => void,
  o: Omit<RampOptions, 'onStep'> = {},
): Promise<CapacityResult> {
  return rampCapacity((c) => probeStep(session, c, stepS), {
    ...o,
    onStep: (s, gain) =>
      log?.(
        `capacity: concurrency ${s.concurrency}: ${s.throughput.toFixed(2)} ok req/s` +
          (Number.isFinite(gain) ? ` (${gain >= 0 ? '+' : ''}${(gain * 100).toFixed(0)}%)` : '') +
          (s.refusedShare > 0 ? `, ${(s.refusedShare * 100).toFixed(0)}% refused` : ''),
      ),
  })
}
