/**
 * Prompt tokens sent to each endpoint whose prefill is not known done (no first token
 * yet): the gateway's own, exact view of the prefill work queued at the servers. It
 * feeds the estimator (prefill ahead of a new request, and when the prefill budget will
 * have room for it) and the dispatch gate (at most one engine step of prompts awaiting
 * their first token at one endpoint).
 */
interface Entry {
  readonly tokens: number
  /** When it was sent. */
  readonly sentAt: number
  /** When its first token is expected (the estimator's server time at dispatch). */
  readonly doneAt: number
  readonly joined: JoinedSink | undefined
  /**
   * By when its first token was promised to its client (Infinity: nothing promised), and
   * its class's priority (lower runs first).
   */
  readonly promiseBy: number
  readonly priority: number
}

/**
 * Told the prompt tokens sent to the same endpoint after it and before its first token, and
 * when: those sent before its step began shared that step, and so its time to first token
 * (the estimator and the engine facts learn from all the tokens a request's prefill met).
 */
export interface JoinedSink {
  join(tokens: number, sentAt: number): void
}

interface Endpoint {
  tokens: number
  /** Few: the prefill budget holds one engine step of prompts. */
  readonly entries: Entry[]
}

/**
 * The prefill budget's rule: `tokens` more may go to an endpoint with `pending` tokens
 * awaiting their first token when they stay within `budget`, or when nothing is pending
 * (an empty endpoint takes any request, however large: it would never run otherwise).
 */
export function fitsBudget(pending: number, tokens: number, budget: number): boolean {
  return pending <= 0 || pending + tokens <= budget
}

export class PrefillLedger {
  private readonly byEndpoint = new Map<string, Endpoint>()

  /** Tokens awaiting their first token at `endpoint`. */
  at(endpoint: string): number {
    return this.byEndpoint.get(endpoint)?.tokens ?? 0
  }

  /** Requests awaiting their first token at `endpoint`. */
  requestsAt(endpoint: string): number {
    return this.byEndpoint.get(endpoint)?.entries.length ?? 0
  }

  /**
   * Counts `tokens` sent to `endpoint`, expected prefilled at `doneAt`; the returned
   * function uncounts them (once).
   */
  add(
    endpoint: string,
    tokens: number,
    doneAt: number,
    joined?: JoinedSink,
    sentAt = 0,
    promiseBy = Number.POSITIVE_INFINITY,
    priority = 0,
  ): () => void {
    let e = this.byEndpoint.get(endpoint)
    if (e === undefined) {
      e = { tokens: 0, entries: [] }
      this.byEndpoint.set(endpoint, e)
    }
    const ep = e
    const entry: Entry = { tokens, sentAt, doneAt, joined, promiseBy, priority }
    for (const other of ep.entries) other.joined?.join(tokens, sentAt)
    ep.tokens += tokens
    ep.entries.push(entry)
    let done = false
    return () => {
      if (done) return
      done = true
      ep.tokens -= tokens
      ep.entries.splice(ep.entries.indexOf(entry), 1)
    }
  }

  /**
   * Of the tokens awaiting their first token at `endpoint`, those sent at or before `t`
   * (the start of the engine step in progress: the server took them into it).
   */
  sentBy(endpoint: string, t: number): number {
    const e = this.byEndpoint.get(endpoint)
    if (e === undefined) return 0
    let n = 0
    for (const x of e.entries) if (x.sentAt < t) n += x.tokens
    return n
  }

  /**
   * The earliest first-token promise of the prompts sent to `endpoint` at or after `t` (the
   * engine step not begun yet takes them) of classes of `priority` or above (lower runs
   * first); Infinity when none is promised.
   */
  earliestPromise(endpoint: string, t: number, priority: number): number {
    const e = this.byEndpoint.get(endpoint)
    if (e === undefined) return Number.POSITIVE_INFINITY
    let by = Number.POSITIVE_INFINITY
    for (const x of e.entries)
      if (x.sentAt >= t && x.priority <= priority && x.promiseBy < by) by = x.promiseBy
    return by
  }

  /**
   * Milliseconds from `now` until `endpoint` is expected to have room for `tokens` more
   * under a budget of `budget` pending tokens: when enough of its pending prompts have
   * their first token (by their expected times; one overdue by some time is expected as
   * late again: its prediction was wrong by at least that much, and counting it as due now
   * would keep a cold start on optimistic priors admitting requests the queue will not serve).
   */
  roomInMs(endpoint: string, tokens: number, budget: number, now: number): number {
    const e = this.byEndpoint.get(endpoint)
    if (e === undefined || e.entries.length === 0) return 0
    let left = e.tokens
    if (fitsBudget(left, tokens, budget)) return 0
    const byTime = e.entries
      .map((x) => ({ tokens: x.tokens, inMs: Math.abs(x.doneAt - now) }))
      .sort((a, b) => a.inMs - b.inMs)
    for (const x of byTime) {
      left -= x.tokens
      if (fitsBudget(left, tokens, budget)) return x.inMs
    }
    return 0
  }

  state(): Record<string, number> {
    return Object.fromEntries([...this.byEndpoint].map(([k, v]) => [k, v.tokens]))
  }
}
