/**
 * The search for the highest offered rate whose SLO attainment (good / offered) stays at or
 * above a target: DistServe's goodput per server. Pure: it calls `trial(rate)` (a run at that
 * rate, or any function in a test) and decides the next rate from the answers alone.
 *
 * 1. Bracket: from `start`, double the rate while it passes (attainment >= target), or halve
 *    it while it fails, until one rate passes and the next one up fails (`step` instead of 2:
 *    a start known to be close, such as a plan's answer, brackets in fewer trials). Going down
 *    stops below `minRate` (nothing passes: the result is 0).
 * 2. Bisect: try the midpoint of the highest passing and the lowest failing rate, and keep the
 *    half where the boundary lies, until the two are within `tolerance` of each other
 *    ((fail - pass) / fail <= tolerance).
 * 3. Stop early after `maxTrials` trials; the result is then the highest rate that passed so
 *    far (with the bracket as it stood, or with no failing rate found when the ramp up never
 *    failed).
 *
 * It assumes attainment falls as the rate rises. A measured attainment is noisy, so a rate
 * can pass above one that failed; the search keeps the bracket consistent (a pass never lies
 * above a fail it has seen): it tries only rates inside it, and a pass recorded above the
 * lowest fail does not count.
 */

export interface SearchOptions {
  /** The first rate tried, requests/s (> 0). */
  readonly start: number
  /** The attainment a rate must reach to pass, in (0, 1]. */
  readonly attainment: number
  /** Stop when (lowest failing - highest passing) / lowest failing <= this. Default 0.05. */
  readonly tolerance?: number
  /** The bracket's factor: up times it while passing, down by it while failing (> 1). Default 2. */
  readonly step?: number
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
  if (o.step !== undefined && !(o.step > 1 && Number.isFinite(o.step)))
    throw new RangeError(`step: expected a factor > 1, got ${o.step}`)
  if (o.maxTrials !== undefined && !(Number.isInteger(o.maxTrials) && o.maxTrials >= 1))
    throw new RangeError(`maxTrials: expected an integer >= 1, got ${o.maxTrials}`)
}

/**
 * The search's state and its next step, without running anything: `next()` says which rate
 * to try (undefined: done, see `stop`), `record()` takes a verdict. Verdicts may come in any
 * order (a plan records its whole sweep first): the bracket is the lowest failing rate and
 * the highest passing rate below it, so a pass above a fail never widens it.
 * searchMaxRate drives it with trials; `slo-gateway plan` with its virtual runs.
 */
export class RateSearch<T = undefined> {
  private readonly o: Required<Omit<SearchOptions, 'onTrial'>>
  private readonly passes: SearchTrial<T>[] = []
  private failRate: number | undefined = undefined
  private tried = 0
  private done: StopReason | undefined = undefined

  constructor(options: Omit<SearchOptions, 'onTrial'>) {
    check(options)
    this.o = { tolerance: 0.05, step: 2, maxTrials: 10, minRate: options.start / 64, ...options }
  }

  /** The highest passing trial under the lowest failing rate. */
  get best(): SearchTrial<T> | undefined {
    let best: SearchTrial<T> | undefined
    for (const t of this.passes)
      if (
        (this.failRate === undefined || t.rate < this.failRate) &&
        (best === undefined || t.rate > best.rate)
      )
        best = t
    return best
  }

  get state(): SearchState {
    return { pass: this.best?.rate, fail: this.failRate }
  }

  /** Why next() said undefined (undefined while the search goes on). */
  get stop(): StopReason | undefined {
    return this.done
  }

  /** Judges a trial at `rate` (its attainment against the target) and records it. */
  record(rate: number, outcome: T & TrialOutcome): SearchTrial<T> {
    const pass = outcome.attainment >= this.o.attainment
    const t: SearchTrial<T> = { n: ++this.tried, rate, outcome, pass }
    if (pass) this.passes.push(t)
    else if (this.failRate === undefined || rate < this.failRate) this.failRate = rate
    return t
  }

  /** The next rate to try, or undefined when the search is done (converged, out of trials, none passed). */
  next(): number | undefined {
    const pass = this.best?.rate
    const fail = this.failRate
    const rate = nextRate(pass, fail, this.o)
    if (rate === undefined) this.done = pass === undefined ? 'none-passed' : 'converged'
    else if (this.tried >= this.o.maxTrials) this.done = 'max-trials'
    return this.done === undefined ? rate : undefined
  }
}

/** The next rate to try given the bracket, or undefined when the search is done. */
function nextRate(
  pass: number | undefined,
  fail: number | undefined,
  o: Required<Omit<SearchOptions, 'onTrial'>>,
) {
  if (pass === undefined && fail === undefined) return o.start
  if (fail === undefined) return (pass as number) * o.step
  if (pass === undefined) {
    const down = fail / o.step
    return down < o.minRate ? undefined : down
  }
  if ((fail - pass) / fail <= o.tolerance) return undefined
  return (pass + fail) / 2
}

export async function searchMaxRate<T extends TrialOutcome>(
  trial: (rate: number) => Promise<T>,
  options: SearchOptions,
): Promise<SearchResult<T>> {
  const search = new RateSearch<T>(options)
  const trials: SearchTrial<T>[] = []
  for (let rate = search.next(); rate !== undefined; rate = search.next()) {
    const t = search.record(rate, await trial(rate))
    trials.push(t)
    options.onTrial?.(t, search.state)
  }
  const best = search.best
  return {
    rate: best?.rate ?? 0,
    best,
    failRate: search.state.fail,
    stop: search.stop ?? 'converged',
    trials,
  }
}
