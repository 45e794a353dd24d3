/**
 * Which engine a /metrics text looks like, by its metric-name prefixes (each adapter's
 * `family`): for the hint "its /metrics look like sglang's; set engine: sglang" when a
 * pool's `engine` is not the servers' own. Run on text the configured adapter could not
 * read, not on every scrape.
 */
import type { EngineName } from '../../config/schema.js'

/** Engines by metric-name prefix; vllm-v0 and vllm share theirs (either adapter reads both). */
const PREFIXES: readonly [RegExp, EngineName][] = [
  [/^(?:# (?:HELP|TYPE) )?vllm:/gm, 'vllm'],
  [/^(?:# (?:HELP|TYPE) )?sglang:/gm, 'sglang'],
  [/^(?:# (?:HELP|TYPE) )?tgi_/gm, 'tgi'],
  [/^(?:# (?:HELP|TYPE) )?llamacpp:/gm, 'llamacpp'],
  [/^(?:# (?:HELP|TYPE) )?trtllm[_:]/gm, 'trtllm'],
]

/** trtllm-serve's older /metrics: JSON iteration stats. */
const TRTLLM_JSON = /^\s*[[{][\s\S]*"numActiveRequests"/

/** The engine whose metric names the text has most of, or undefined (none of theirs). */
export function sniffEngine(text: string): EngineName | undefined {
  if (TRTLLM_JSON.test(text.slice(0, 4096))) return 'trtllm'
  let best: EngineName | undefined
  let most = 0
  for (const [re, engine] of PREFIXES) {
    re.lastIndex = 0
    let n = 0
    while (re.exec(text) !== null) n++
    if (n > most) {
      best = engine
      most = n
    }
  }
  return best
}

/** The same metrics family: no hint between vllm and vllm-v0. */
export function sameFamily(a: EngineName, b: EngineName): boolean {
  const family = (e: EngineName) => (e === 'vllm-v0' ? 'vllm' : e)
  return family(a) === family(b)
}
