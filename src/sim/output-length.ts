import type { OutputDistribution } from './profile-schema.js'
import type { Rng } from './rng.js'

/** Draws how many tokens a model "wants" to write before EOS, from the profile's distribution. */
export function drawOutputTokens(d: OutputDistribution, rng: Rng): number {
  switch (d.kind) {
    case 'fixed':
      return d.tokens
    case 'uniform':
      return d.min + Math.floor(rng.next() * (d.max - d.min + 1))
    case 'lognormal':
      return Math.max(d.min, Math.round(d.median * Math.exp(d.sigma * rng.normal())))
  }
}

export interface OutputPlan {
  readonly tokens: number
  readonly finishReason: 'stop' | 'length'
}

/**
 * The output length of a request: `cap` when it sets ignore_eos, else the drawn length capped by
 * `cap` (max_tokens, or what is left of max_model_len). Reaching the cap finishes with 'length'.
 */
export function planOutput(cap: number, ignoreEos: boolean, d: OutputDistribution, rng: Rng): OutputPlan {
  if (ignoreEos) return { tokens: cap, finishReason: 'length' }
  const drawn = drawOutputTokens(d, rng)
  return drawn >= cap ? { tokens: cap, finishReason: 'length' } : { tokens: drawn, finishReason: 'stop' }
}
