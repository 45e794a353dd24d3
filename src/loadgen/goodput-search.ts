/**
 * The search for the highest offered rate whose SLO attainment (good / offered) stays at or
 * above a target: DistServe's goodput per server. Pure: it calls `trial(rate)` (a run at that
 * rate, or any function in a test) and decides the next rate from the answers alone.
 *
 * 1. Bracket: from `start`, double the rate while it passes (attainment >= target), or halve
 *    it while it fails, until one rate passes and the next one up fails. Halving stops below
 *    `minRate` (nothing passes: the result is 0).
 * 2. Bisect: try the midpoint of the highest passing and the lowest failing rate, and keep the
 *    half where the boundary lies, until the two are within `tolerance` of each other
 *    ((fail - pass) / fail <= tolerance).
 * 3. Stop early after `maxTrials` trials; the result is then the highest rate that passed so
 *    far (with the bracket as it stood, or with no failing rate found when the ramp up never
 *    failed).
 *
 * It assumes attainment falls as the rate rises. A measured attainment is noisy, so a rate
 * can pass above one that failed; the search keeps the bracket consistent (a pass never lies
 * above a fail it has seen) by trying only rates inside it.
 */

export interface SearchOptions {
  /** The first rate tried, requests/s (> 0). */
  readonly start: number
  /** The attainment a rate must reach to pass, in (0, 1]. */
  readonly attainment: number
  /** Stop when (lowest failing - highest passing) / lowest failing <= this. Default 0.05. */
  readonly tolerance?: number
  /** At most this many trials. Default 10. */
  readonly maxTrials?: number
  /** Halving stops below this rate. Default start / 64. */
  readonly minRate?: number
  /** Told of every trial once it is judged. */
  readonly onTrial?: (t: SearchTrial<unknown>, state: SearchState) => void
}

export interface TrialOutcome {
  /** good / offered, in [0, 1] (NaN counts as a fail). */
  readonly attainment: number
}

export interface SearchTrial<T> {
  readonly n: number
  readonly rate: number
  readonly outcome: T
  readonly pass: boolean
}

export interface SearchState {
  /** The highest rate that passed so far. */
  readonly pass: number | undefined
  /** The lowest rate that failed so far. */
  readonly fail: number | undefined
}

export type StopReason =
  /** The bracket is within the tolerance. */
  | 'converged'
  /** maxTrials reached first. */
  | 'max-trials'
  /** No rate down to minRate passed. */
  | 'none-passed'

export interface SearchResult<T> {
  /** The highest rate that passed; 0 when none did. */
  readonly rate: number
  /** Its trial (undefined when none passed). */
  readonly best: SearchTrial<T> | undefined
  /** The lowest rate that failed (undefined when none failed). */
  readonly failRate: number | undefined
  readonly stop: StopReason
  /** Every trial, in the order run. */
  readonly trials: readonly SearchTrial<T>[]
}

function check(o: SearchOptions): void {
  if (!(o.start > 0)) throw new RangeError(`start: expected a rate > 0, got ${o.start}`)
  if (!(o.attainment > 0 && o.attainment <= 1))
    throw new RangeError(`attainment: expected a share in (0, 1], got ${o.attainment}`)
  if (o.tolerance !== undefined && !(o.tolerance > 0 && o.tolerance < 1))
    throw new RangeError(`tolerance: expected a share in (0, 1), got ${o.tolerance}`)
  if (o.maxTrials !== undefined && !(Number.isInteger(o.maxTrials) && o.maxTrials >= 1))
    throw new RangeError(`maxTrials: expected an integer >= 1, got ${o.maxTrials}`)
}

/** The next rate to try given the bracket, or undefined when the search is done. */
function nextRate(pass: number | undefined, fail: number | undefined, o: Required<SearchOptions>) {
  if (pass === undefined && fail === undefined) return o.start
  if (fail === undefined) return (pass as number) * 2
  if (pass === undefined) {
    const down = fail / 2
    return down < o.minRate ? undefined : down
  }
  if ((fail - pass) / fail <= o.tolerance) return undefined
  return (pass + fail) / 2
}

export async function searchMaxRate<T extends TrialOutcome>(
  trial: (rate: number) => Promise<T>,
  options: SearchOptions,
): Promise<SearchResult<T>> {
  check(options)
  const o: Required<SearchOptions> = {
    tolerance: 0.05,
    maxTrials: 10,
    minRate: options.start / 64,
    onTrial: () => {},
    ...options,
  }
  const trials: SearchTrial<T>[] = []
  let pass: SearchTrial<T> | undefined
  let fail: number | undefined
  let stop: StopReason | undefined
  for (;;) {
    const rate = nextRate(pass?.rate, fail, o)
    if (rate === undefined) {
      stop = pass === undefined ? 'none-passed' : 'converged'
      break
    }
    if (trials.length >= o.maxTrials) {
      stop = 'max-trials'
      break
    }
    const outcome = await trial(rate)
    const ok = outcome.attainment >= o.attainment
    const t: SearchTrial<T> = { n: trials.length + 1, rate, outcome, pass: ok }
    trials.push(t)
    if (ok) pass = t
    else fail = rate
    o.onTrial(t, { pass: pass?.rate, fail })
  }
  return { rate: pass?.rate ?? 0, best: pass, failRate: fail, stop, trials }
}
