/**
 * Prompt tokens at the edge, without a tokenizer: characters / (characters per token),
 * one ratio per model, refined online from the `usage.prompt_tokens` the backend reports.
 *
 * A real tokenizer costs 50-500 µs per KB of prompt on the hot path (bench:admission
 * measures this estimate's error instead); the ratio converges within a few dozen
 * requests and is kept per model, since tokenizers differ. Every path uses this one
 * estimate (parse sets `ticket.promptTokens`); it learns as an observer of every
 * exchange, from the usage the server reported.
 */
import type { ExchangeObserver } from '../exchange.js'
import type { Ticket } from '../ticket.js'

export const INITIAL_CHARS_PER_TOKEN = 4
/** Weight of one new observation in the moving average. */
const ALPHA = 0.05
const MIN_RATIO = 1
const MAX_RATIO = 12
/** Per-message overhead (role, separators) in tokens, as chat templates add. */
export const MESSAGE_OVERHEAD_TOKENS = 4

export class TokenEstimator implements ExchangeObserver {
  private readonly ratios = new Map<string, number>()

  charsPerToken(model: string): number {
    return this.ratios.get(model) ?? INITIAL_CHARS_PER_TOKEN
  }

  estimate(model: string, chars: number, messages: number): number {
    return Math.ceil(chars / this.charsPerToken(model)) + messages * MESSAGE_OVERHEAD_TOKENS
  }

  /** Learns from a finished request: its characters against the tokens the backend counted. */
  observe(model: string, chars: number, messages: number, promptTokens: number): void {
    const contentTokens = promptTokens - messages * MESSAGE_OVERHEAD_TOKENS
    if (chars < 64 || contentTokens <= 0) return // too small to say anything
    const ratio = Math.min(MAX_RATIO, Math.max(MIN_RATIO, chars / contentTokens))
    const prev = this.ratios.get(model)
    this.ratios.set(model, prev === undefined ? ratio : prev + ALPHA * (ratio - prev))
  }

  /** Learns from each request that ends with usage reported for a known model. */
  ended(t: Ticket): void {
    if (t.usage === undefined || t.model === undefined) return
    this.observe(t.model, t.promptChars, t.promptMessages, t.usage.promptTokens)
  }

  state(): Record<string, number> {
    return Object.fromEntries([...this.ratios].map(([m, r]) => [m, Math.round(r * 1000) / 1000]))
  }
}
