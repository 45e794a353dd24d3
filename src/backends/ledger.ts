/**
 * The in-flight ledger of one endpoint: requests and tokens (prompt + expected output) the
 * gateway has sent and not yet seen finish.
 *
 * Exactness: `open` adds an entry, `close` removes it once (a second close of the same
 * entry is a no-op), so `requests` and `tokens` are always the sum of the open entries.
 *
 * It also keeps what changed since the load data in use was taken, for load-correction.ts.
 * Scrapes are numbered: `beginScrape()` returns the number of a scrape as it is sent, and
 * every entry remembers the number current when it opened. When scrape N's result is
 * applied (`applyScrape(N)`), an entry opened after scrape N was sent is one the scraped
 * numbers cannot include ("new"), and an entry opened before it that closes afterwards is
 * one the scraped numbers still include although it has finished ("done").
 */
import { SlotMap } from '../slot-map.js'

export interface LedgerEntryHandle {
  readonly tokens: number
}

class Entry implements LedgerEntryHandle {
  open = true
  slot = -1
  /** Its first token came after the applied scrape, which counted it as waiting. */
  startedSince = false
  constructor(
    readonly tokens: number,
    readonly epoch: number,
    readonly openedAt: number,
  ) {}
}

export interface LedgerSnapshot {
  /** Open entries: requests in flight and their tokens. */
  readonly requests: number
  readonly tokens: number
  /** In flight and opened after the applied scrape was sent (not in its numbers). */
  readonly newRequests: number
  readonly newTokens: number
  /** Opened before the applied scrape and finished since (still in its numbers). */
  readonly doneRequests: number
  readonly doneTokens: number
  /** Opened before the applied scrape, in flight, and with their first token since (the scrape may count them as waiting). */
  readonly startedRequests?: number
}

export class Ledger {
  /** Not a Set: see src/slot-map.ts. */
  private readonly live = new SlotMap<Entry, Entry>()
  private reqs = 0
  private toks = 0
  /** Number of the next scrape to be sent. */
  private nextEpoch = 1
  /** Number of the scrape whose data is in use (0: none yet). */
  private appliedEpoch = 0
  private newReqs = 0
  private newToks = 0
  private doneReqs = 0
  private doneToks = 0
  private startedReqs = 0

  get requests(): number {
    return this.reqs
  }

  get tokens(): number {
    return this.toks
  }

  /** Opens an entry for a request of `tokens` sent at `now` (clock ms). */
  open(tokens: number, now = 0): LedgerEntryHandle {
    const t = Number.isFinite(tokens) && tokens > 0 ? tokens : 0
    const e = new Entry(t, this.nextEpoch - 1, now)
    this.live.set(e, e)
    this.reqs++
    this.toks += t
    // Opened after the applied scrape was sent: its numbers cannot include this request.
    this.newReqs++
    this.newToks += t
    return e
  }

  /** Closes an entry; false when it was already closed (or is not from this ledger). */
  close(handle: LedgerEntryHandle): boolean {
    if (!(handle instanceof Entry) || !handle.open || !this.live.has(handle)) return false
    handle.open = false
    this.live.delete(handle)
    if (handle.startedSince) this.startedReqs--
    this.reqs--
    this.toks -= handle.tokens
    if (this.reqs === 0) this.toks = 0 // no float drift once empty
    if (handle.epoch >= this.appliedEpoch) {
      this.newReqs--
      this.newToks -= handle.tokens
    } else {
      this.doneReqs++
      this.doneToks += handle.tokens
    }
    return true
  }

  /**
   * The request of `handle` had its first token: its prompt is no longer waiting at the
   * server. Counted when the scrape in use may have seen it waiting (opened before it).
   */
  started(handle: LedgerEntryHandle): void {
    if (!(handle instanceof Entry) || !handle.open || handle.startedSince) return
    if (handle.epoch >= this.appliedEpoch) return
    handle.startedSince = true
    this.startedReqs++
  }

  /** A scrape is being sent now; returns its number for applyScrape. */
  beginScrape(): number {
    return this.nextEpoch++
  }

  /** The data of scrape `epoch` is now in use: recount new and done relative to it. */
  applyScrape(epoch: number): void {
    if (epoch <= this.appliedEpoch) return
    this.appliedEpoch = epoch
    this.newReqs = 0
    this.newToks = 0
    this.startedReqs = 0
    for (const e of this.live) {
      e.startedSince = false
      if (e.epoch >= epoch) {
        this.newReqs++
        this.newToks += e.tokens
      }
    }
    this.doneReqs = 0
    this.doneToks = 0
  }

  /** Requests in flight that were sent before `cutoff` (clock ms). */
  openedBefore(cutoff: number): number {
    let n = 0
    for (const e of this.live) if (e.openedAt < cutoff) n++
    return n
  }

  snapshot(): LedgerSnapshot {
    return {
      requests: this.reqs,
      tokens: this.toks,
      newRequests: this.newReqs,
      newTokens: this.newToks,
      doneRequests: this.doneReqs,
      doneTokens: this.doneToks,
      startedRequests: this.startedReqs,
    }
  }
}
