/**
 * Filler text: the simulator's "tokens". Each entry is one token, JSON-safe (no escaping needed),
 * so a stream chunk is built by concatenating constant strings.
 */
const WORDS =
  'The quick brown fox jumps over the lazy dog while a simulated model writes filler text one token at a time so that ' +
  'gateways load generators and dashboards see realistic streams of words with spaces and punctuation , numbers 1 2 3 ' +
  'and nothing that needs escaping in JSON strings . Latency throughput batching queueing memory cache blocks steps'

export const FILLER_TOKENS: readonly string[] = WORDS.split(' ').map((w, i) => (i === 0 ? w : ` ${w}`))

/** The text of output token number `i` (0-based). */
export function fillerToken(i: number): string {
  return FILLER_TOKENS[i % FILLER_TOKENS.length]!
}

/** The text of the first `n` output tokens. */
export function fillerText(n: number): string {
  let s = ''
  for (let i = 0; i < n; i++) s += fillerToken(i)
  return s
}
