/**
 * The load data of one endpoint and how fresh it is, from the scrape results.
 *
 * Freshness: the data is fresh while it is younger than `stale_after_ms`; its age counts from
 * when the scrape that read it was sent (the conservative end). Then:
 * - a scrape that cannot connect, or text the adapter cannot read: stale at once;
 * - a scrape that times out or answers non-200: the last data ages out;
 * - frozen data: a server whose /metrics answers the very same text twice in a row although
 *   a request of the gateway was in flight there the whole time in between (sent more than
 *   a grace period before the first of the two scrapes, still not finished at the second) is
 *   reporting old numbers: a live engine with a request in its queue or batch moves its
 *   counters every step. It is judged so once the numbers have stood still for
 *   `stale_after_ms` (from the last scrape that returned different text), and the data then
 *   counts its age from that scrape: stale as soon as it is judged. Not sooner: an engine's
 *   numbers move once a step, and a slow engine's step (a llama.cpp server on CPU, ~100 ms a
 *   token and half a second for a prompt chunk) spans two scrapes 100 ms apart, which were
 *   logged as frozen metrics about once a second while nothing was wrong. An idle server
 *   repeats itself legitimately (nothing in flight), and requests that end at once (a 400)
 *   never span two scrapes. The verdict sticks to that text: while the
 *   server keeps answering it, the endpoint stays stale, except that it may take one request
 *   at a time when nothing else is in flight there (a probe, see endpoint.ts): a server that
 *   is fine moves its text while serving it. What can look frozen wrongly: an idle server
 *   whose only request is a response finished long ago that a slow client is still reading;
 *   it is usable again (as a probe) once that response ends.
 */
import type { Ledger } from './ledger.js'
import type { ScrapeOutcome } from './scraper.js'
import type { BackendLoad, MetricAdapter } from './types.js'

/** How long a request may take to show in the engine's counts (HTTP, tokenisation). */
export const FROZEN_GRACE_MIN_MS = 250

export interface ScrapeRecord {
  readonly at: number
  readonly ok: boolean
  readonly failure?: string
  readonly detail?: string
}

export type ScrapeVerdict = 'fresh' | 'frozen' | 'unreadable' | 'failed'

export class LoadState {
  load: BackendLoad | undefined
  loadAt: number | undefined
  last: ScrapeRecord | undefined
  private invalid = false
  private frozenText = false
  private body: string | undefined
  /** Send time of the last scrape whose text differed from the one before it. */
  private bodySince: number | undefined
  /** Send time of the scrape before that one (the last that returned the older text). */
  private bodyBefore: number | undefined
  /** Send time of the last scrape that returned `body`. */
  private bodyLastAt: number | undefined
  /** A request of the gateway was in flight across two scrapes that returned `body`. */
  private stillWhileBusy = false

  constructor(
    private readonly adapter: MetricAdapter,
    private readonly staleAfterMs: number,
    private readonly frozenGraceMs: number,
  ) {}

  ageMs(now: number): number | undefined {
    return this.loadAt === undefined ? undefined : Math.max(0, now - this.loadAt)
  }

  isFresh(now: number): boolean {
    const age = this.ageMs(now)
    return !this.invalid && age !== undefined && age <= this.staleAfterMs
  }

  /** The server keeps answering text judged frozen (see above). */
  get frozen(): boolean {
    return this.frozenText && !this.invalid
  }

  /** Applies one scrape sent at `sentAt` (clock ms) and answered at `now`. */
  apply(outcome: ScrapeOutcome, sentAt: number, now: number, ledger: Ledger): ScrapeVerdict {
    if (!outcome.ok) {
      if (outcome.failure === 'connect') this.invalid = true
      this.last = { at: now, ok: false, failure: outcome.failure, detail: outcome.detail }
      return 'failed'
    }
    const previousAt = this.bodyLastAt
    const unchanged = outcome.body === this.body
    if (!unchanged) {
      this.body = outcome.body
      this.bodyBefore = previousAt
      this.bodySince = sentAt
      this.frozenText = false
      this.stillWhileBusy = false
    }
    this.bodyLastAt = sentAt
    const load = this.adapter.parse(outcome.body)
    if (load === undefined) {
      this.invalid = true
      this.last = { at: now, ok: false, failure: 'unreadable', detail: `not ${this.adapter.engine} metrics` }
      return 'unreadable'
    }
    this.load = load
    this.invalid = false
    // a request in flight across two scrapes of this text, at any of them
    if (unchanged && previousAt !== undefined && ledger.openedBefore(previousAt - this.frozenGraceMs) > 0)
      this.stillWhileBusy = true
    const stillSince = this.bodyBefore ?? this.bodySince ?? sentAt
    if (unchanged && (this.frozenText || (this.stillWhileBusy && sentAt - stillSince > this.staleAfterMs))) {
      this.frozenText = true
      this.loadAt = stillSince
      this.last = { at: now, ok: false, failure: 'frozen', detail: 'same text while a request was in flight' }
      return 'frozen'
    }
    this.loadAt = sentAt
    this.last = { at: now, ok: true }
    return 'fresh'
  }
}
