/**
 * How far one endpoint's prefix index is trusted: its predictions against the engine's own
 * prefix-cache counters (vLLM's `prefix_cache_hits_total` / `prefix_cache_queries_total`,
 * TensorRT-LLM's reused / missed blocks), read at every scrape.
 *
 *   predicted hit ratio  p = Σ expected hit tokens / Σ prompt tokens      of the prompts
 *                            the gateway sent here (the index's raw match, before trust)
 *   measured hit ratio   m = Σ Δ hits / Σ Δ queries                        from the counters
 *   trust                  = clamp(m / p, 0, 1)
 *
 * Each Σ is over the recent scrapes that saw traffic (every sum decays by DECAY at such a
 * scrape: about the last ten), so a server that stops holding what the gateway sent (KV
 * pressure, another client's traffic evicting it, caching turned off) is noticed within a
 * few scrapes, and idle time does not wash the evidence out. Until the sums hold enough
 * evidence (MIN_QUERY_TOKENS measured, MIN_HIT_TOKENS predicted hit), trust is the prior 1:
 * the index as it matches.
 *
 * Ratios, not counts: the units cancel (the engine counts its tokenizer's tokens, the
 * gateway its estimate), and the engine also counts other clients (other gateway replicas
 * sharing the server), whose hit ratio is presumed like the gateway's own. Capped at 1: the
 * index can be trusted less than it matches, never more (a prompt it never sent here cannot
 * be predicted cached, whatever the server hit for others). A counter that goes backwards
 * means the server restarted: the baseline starts again (the caller forgets the index too).
 * An engine without the counters leaves trust at 1.
 */

/** Weight kept per scrape with traffic. */
export const DECAY = 0.9
export const MIN_QUERY_TOKENS = 2_048
export const MIN_HIT_TOKENS = 512

export class PrefixCalibration {
  private sentTokens = 0
  private sentHits = 0
  private pendingTokens = 0
  private pendingHits = 0
  private queries = 0
  private hits = 0
  private lastQueries: number | undefined = undefined
  private lastHits: number | undefined = undefined
  private counters = false

  /** A prompt of `promptTokens` was sent, `expectedHit` of them predicted cached (raw). */
  sent(promptTokens: number, expectedHit: number): void {
    this.pendingTokens += Math.max(0, promptTokens)
    this.pendingHits += Math.max(0, expectedHit)
  }

  /**
   * A scrape landed with these counters (undefined: the engine does not report them).
   * Returns true when a counter went backwards (the server restarted).
   */
  scraped(queriesTotal: number | undefined, hitsTotal: number | undefined): boolean {
    let dq = 0
    let dh = 0
    let restarted = false
    if (queriesTotal !== undefined && hitsTotal !== undefined) {
      this.counters = true
      if (this.lastQueries !== undefined && this.lastHits !== undefined) {
        if (queriesTotal < this.lastQueries || hitsTotal < this.lastHits) restarted = true
        else {
          dq = queriesTotal - this.lastQueries
          dh = hitsTotal - this.lastHits
        }
      }
      this.lastQueries = queriesTotal
      this.lastHits = hitsTotal
    }
    if (restarted) {
      // what was sent before the restart was lost with the server's cache
      this.sentTokens = this.sentHits = this.queries = this.hits = 0
      this.pendingTokens = this.pendingHits = 0
      return true
    }
    if (dq <= 0 && this.pendingTokens <= 0) return false
    this.sentTokens = this.sentTokens * DECAY + this.pendingTokens
    this.sentHits = this.sentHits * DECAY + this.pendingHits
    this.queries = this.queries * DECAY + dq
    this.hits = this.hits * DECAY + Math.min(dh, dq)
    this.pendingTokens = this.pendingHits = 0
    return false
  }

  /** The recent (decayed) sums behind predictedRatio: prompt tokens sent, and of them predicted hit. */
  get recent(): { readonly promptTokens: number; readonly hitTokens: number } {
    return { promptTokens: this.sentTokens, hitTokens: this.sentHits }
  }

  /** The predicted hit ratio of what was sent (raw), or undefined before anything was. */
  get predictedRatio(): number | undefined {
    return this.sentTokens > 0 ? this.sentHits / this.sentTokens : undefined
  }

  /** The engine's measured hit ratio, or undefined without counters or traffic. */
  get measuredRatio(): number | undefined {
    return this.queries > 0 ? this.hits / this.queries : undefined
  }

  /** True once both sides hold enough evidence for the ratio of ratios to mean something. */
  get calibrated(): boolean {
    return this.counters && this.queries >= MIN_QUERY_TOKENS && this.sentHits >= MIN_HIT_TOKENS
  }

  /** The factor applied to the index's expected hits, 0..1 (see the rule above). */
  get trust(): number {
    if (!this.calibrated) return 1
    const p = this.predictedRatio ?? 0
    const m = this.measuredRatio ?? 0
    return p > 0 ? Math.max(0, Math.min(1, m / p)) : 1
  }

  state(): object {
    const r = (v: number | undefined) => (v === undefined ? null : Math.round(v * 1000) / 1000)
    return {
      predictedHitRatio: r(this.predictedRatio),
      measuredHitRatio: this.counters ? r(this.measuredRatio) : null,
      trust: r(this.trust),
      calibrated: this.calibrated,
      engineCounters: this.counters,
    }
  }
}
