/**
 * The requests a pool's admission has dispatched and not seen end, per endpoint, and when
 * the first of them at an endpoint is expected to end: the earliest a batch slot or KV
 * room frees there (the honest Retry-After of a request refused for headroom).
 */
import { SlotMap } from '../slot-map.js'
import type { Waiting } from './waiting.js'

/** A running request's expected end (RunningRequests.ends). */
export interface RunningEnd {
  readonly steps: number
  readonly kvTokens: number
}

/** A list of ends is reused this long, ms: a few engine steps change it by a few tokens each. */
const ENDS_FRESH_MS = 5

export class RunningRequests {
  /** Not Sets: see slot-map.ts. */
  private readonly byEndpoint = new Map<string, SlotMap<Waiting, Waiting>>()
  /** The last ends() of each endpoint, and when (a forecast asks it per queued request). */
  private readonly endsCache = new Map<string, { at: number; ends: RunningEnd[] }>()

  add(endpoint: string, w: Waiting): void {
    let here = this.byEndpoint.get(endpoint)
    if (here === undefined) {
      here = new SlotMap()
      this.byEndpoint.set(endpoint, here)
    }
    here.set(w, w)
    this.endsCache.delete(endpoint)
  }

  delete(endpoint: string, w: Waiting): void {
    this.byEndpoint.get(endpoint)?.delete(w)
    this.endsCache.delete(endpoint)
  }

  /**
   * When each request running at `endpoint` is expected to end, soonest first: the output
   * tokens it is still expected to stream (after that many more engine steps its batch slot
   * frees), and the KV tokens it reserved, which free with it. The same list for
   * ENDS_FRESH_MS after `now`, unless a request starts or ends there.
   */
  ends(endpoint: string, now: number): readonly RunningEnd[] {
    const cached = this.endsCache.get(endpoint)
    if (cached !== undefined && now - cached.at < ENDS_FRESH_MS) return cached.ends
    const out: RunningEnd[] = []
    for (const w of this.byEndpoint.get(endpoint) ?? []) {
      const t = w.ticket
      out.push({ steps: Math.max(1, t.expectedOutputTokens - t.contentChunks), kvTokens: w.kvTokens })
    }
    out.sort((a, b) => a.steps - b.steps)
    this.endsCache.set(endpoint, { at: now, ends: out })
    return out
  }

  /**
   * Ms until the first request running at `endpoint` is expected to end: what is left of
   * its prefill (`prefillMsAt`: its predicted first-token time) and of its expected output,
   * one token per `stepMs`. `stepMs` when the gateway has none running there (other
   * clients' requests hold it).
   */
  firstEndInMs(
    endpoint: string,
    stepMs: number,
    now: number,
    prefillMsAt: (w: Waiting) => number | undefined,
  ): number {
    let best = Number.POSITIVE_INFINITY
    for (const w of this.byEndpoint.get(endpoint) ?? []) {
      const t = w.ticket
      const left = Math.max(0, t.expectedOutputTokens - t.contentChunks) * stepMs
      const firstTokenAt = t.firstTokenAt === undefined ? prefillMsAt(w) : undefined
      const prefill = firstTokenAt === undefined ? 0 : Math.max(0, firstTokenAt - now)
      best = Math.min(best, prefill + left)
    }
    return Number.isFinite(best) ? best : stepMs
  }
}
