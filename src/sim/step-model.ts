import type { StepTimeModel } from './profile-schema.js'

/** What one engine step computes, as the step-time model sees it. */
export interface StepCost {
  /** Tokens of prompts (or of recomputation after preemption) computed in this step. */
  readonly prefillTokens: number
  /** Sequences that compute exactly one new token (decode) in this step. */
  readonly decodeSeqs: number
  /** Tokens of context that attention reads: for every scheduled sequence, its cached + new tokens. */
  readonly contextTokens: number
}

/**
 * Model time of one step, in milliseconds, before time scaling:
 * base + perPrefillToken·prefill + perDecodeSeq·decodeSeqs + perContextToken·context.
 * `base` is the weight-read floor of a forward pass (memory bound), `perPrefillToken` the compute
 * cost of a prompt token (compute bound), `perDecodeSeq` per-sequence overhead (sampling,
 * bookkeeping), `perContextToken` the KV-cache read of attention.
 */
export function stepTimeMs(m: StepTimeModel, c: StepCost): number {
  return (
    m.baseMs +
    m.perPrefillTokenMs * c.prefillTokens +
    m.perDecodeSeqMs * c.decodeSeqs +
    m.perContextTokenMs * c.contextTokens
  )
}
