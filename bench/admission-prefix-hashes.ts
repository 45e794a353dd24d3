/**
 * Block hashes for the virtual-time engine (admission-capacity.ts), so that capacity measured
 * on prefix-sharing traffic sees the prefix-cache hits the served simulator would.
 */
import { parseChatRequest } from '../src/sim/openai-parse.js'
import { blockHashes } from '../src/sim/prefix-hash.js'
import type { SimProfile } from '../src/sim/profile-schema.js'
import { type Arrival, chatMessages } from './admission-workload.js'

/**
 * The prefix-cache block hashes the served simulator computes for a request of prefix-sharing
 * traffic (its canonical chat text, as the simulator parses it); none for a unique prompt,
 * which no other request shares.
 */
export function hashesOf(profile: SimProfile, a: Arrival): string[] {
  if (a.messages === undefined || !profile.engine.enablePrefixCaching) return []
  // request k of a sequence is the same at every probed rate: hash it once
  const key = `${profile.name}/${a.cls}/${a.seq}/${a.promptTokens}`
  const known = HASHES.get(key)
  if (known !== undefined) return known
  const parsed = parseChatRequest({ messages: chatMessages('virtual', a) })
  if (!parsed.ok) throw new Error(`bench prompt not parsed: ${parsed.message}`)
  const bs = profile.engine.blockSize
  const hashes = blockHashes(parsed.spec.prefixSource, bs, Math.floor(parsed.spec.promptTokens / bs))
  HASHES.set(key, hashes)
  return hashes
}

/** Block hashes of the requests of prefix-sharing sequences, by profile, class, position and length. */
const HASHES = new Map<string, string[]>()

/** Frees the memo of block hashes (a workload's capacity and reference are measured). */
export function forgetHashes(): void {
  HASHES.clear()
}
