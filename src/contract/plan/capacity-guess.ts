/**
 * A first guess of one replica's capacity in requests/s, from the step model alone: the
 * engine's time per request when its batch is as full as the KV cache (at 0.8) and
 * max_num_seqs allow is its prefill plus its share of the decode steps. Only the sweep's
 * scale: the sweep and the search measure the real figure.
 */
import type { SimProfile } from '../../sim/profile-schema.js'
import { stepTimeMs } from '../../sim/step-model.js'
import type { TypicalLengths } from '../workload-classes.js'

export function capacityGuess(profile: SimProfile, t: TypicalLengths): number {
  const e = profile.engine
  const ctx = t.promptTokens + t.outputTokens / 2
  const kv = e.numGpuBlocks * e.blockSize * 0.8
  const batch = Math.max(1, Math.min(e.maxNumSeqs, Math.floor(kv / (t.promptTokens + t.outputTokens))))
  const step = stepTimeMs(profile.stepTime, {
    prefillTokens: 0,
    decodeSeqs: batch,
    contextTokens: batch * ctx,
  })
  const prefill = profile.stepTime.perPrefillTokenMs * t.promptTokens
  const perRequestMs = prefill + (t.outputTokens * step) / batch
  return 1000 / Math.max(1e-6, perRequestMs)
}
