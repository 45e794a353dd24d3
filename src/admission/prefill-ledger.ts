/**
 * Prompt tokens sent to each endpoint whose prefill is not known done (no first token
 * yet): the gateway's own, exact view of the prefill work queued at the servers. It
 * feeds the estimator (prefill ahead of a new request) and the dispatch gate (at most
 * one engine step of prompts awaiting their first token at one endpoint).
 */
export class PrefillLedger {
  private readonly byEndpoint = new Map<string, number>()
  private readonly requests = new Map<string, number>()

  /** Tokens awaiting their first token at `endpoint`. */
  at(endpoint: string): number {
    return this.byEndpoint.get(endpoint) ?? 0
  }

  /** Requests awaiting their first token at `endpoint`. */
  requestsAt(endpoint: string): number {
    return this.requests.get(endpoint) ?? 0
  }

  /** Counts `tokens` sent to `endpoint`; the returned function uncounts them (once). */
  add(endpoint: string, tokens: number): () => void {
    this.byEndpoint.set(endpoint, this.at(endpoint) + tokens)
    this.requests.set(endpoint, this.requestsAt(endpoint) + 1)
    let done = false
    return () => {
      if (done) return
      done = true
      this.byEndpoint.set(endpoint, this.at(endpoint) - tokens)
      this.requests.set(endpoint, this.requestsAt(endpoint) - 1)
    }
  }

  state(): Record<string, number> {
    return Object.fromEntries(this.byEndpoint)
  }
}
