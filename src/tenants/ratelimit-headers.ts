/**
 * OpenAI's rate-limit headers from a limiter decision's states: on admitted responses
 * (forward) and on 429s (the limits stage), so a client sees its quota either way.
 *
 *   x-ratelimit-limit-requests      the tenant's rpm        x-ratelimit-limit-tokens      its tpm
 *   x-ratelimit-remaining-requests  requests admissible now x-ratelimit-remaining-tokens  tokens in the bucket
 *   x-ratelimit-reset-requests      until full, e.g. `1s`   x-ratelimit-reset-tokens      e.g. `6m0s`
 *
 * A limit the tenant does not have is not sent.
 */
import type { LimitState } from './limiter.js'

/**
 * A duration as OpenAI (and Go's time.Duration) writes it: `250ms`, `1s`, `1.5s`, `6m0s`,
 * `1h2m3s`. Whole milliseconds, rounded up; `0s` for nothing left to wait.
 */
export function resetDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms))
  if (total === 0) return '0s'
  if (total < 1000) return `${total}ms`
  const h = Math.floor(total / 3_600_000)
  const m = Math.floor((total % 3_600_000) / 60_000)
  const secMs = total % 60_000
  const sec = secMs % 1000 === 0 ? String(secMs / 1000) : String(secMs / 1000).replace(/0+$/, '')
  if (h > 0) return `${h}h${m}m${sec}s`
  if (m > 0) return `${m}m${sec}s`
  return `${sec}s`
}

function put(out: Record<string, string>, kind: 'requests' | 'tokens', s: LimitState): void {
  out[`x-ratelimit-limit-${kind}`] = String(s.limit)
  out[`x-ratelimit-remaining-${kind}`] = String(Math.max(0, Math.floor(s.remaining)))
  out[`x-ratelimit-reset-${kind}`] = resetDuration(s.resetMs)
}

/** Adds the headers of the states present to `out` (and returns it). */
export function rateLimitHeaders(
  requests: LimitState | undefined,
  tokens: LimitState | undefined,
  out: Record<string, string> = {},
): Record<string, string> {
  if (requests !== undefined) put(out, 'requests', requests)
  if (tokens !== undefined) put(out, 'tokens', tokens)
  return out
}
