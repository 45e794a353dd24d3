/**
 * Prompt- and output-length buckets: latency is stratified by them because long prompts
 * have a long TTFT by nature and long outputs dominate E2E. Edges are in tokens; a bucket
 * holds `lower <= n < upper`. The label values are fixed strings, so they stay bounded.
 */

interface Bucket {
  /** Exclusive upper edge in tokens (Infinity for the last bucket). */
  readonly upper: number
  readonly label: string
}

export const PROMPT_LENGTH_BUCKETS: readonly Bucket[] = [
  { upper: 256, label: '0-256' },
  { upper: 1024, label: '256-1k' },
  { upper: 4096, label: '1k-4k' },
  { upper: 16384, label: '4k-16k' },
  { upper: Number.POSITIVE_INFINITY, label: '16k+' },
]

export const OUTPUT_LENGTH_BUCKETS: readonly Bucket[] = [
  { upper: 64, label: '0-64' },
  { upper: 256, label: '64-256' },
  { upper: 1024, label: '256-1k' },
  { upper: 4096, label: '1k-4k' },
  { upper: Number.POSITIVE_INFINITY, label: '4k+' },
]

function bucketOf(buckets: readonly Bucket[], tokens: number): string {
  for (const b of buckets) if (tokens < b.upper) return b.label
  // Unreachable: the last bucket is open-ended. NaN lands here too.
  return buckets[buckets.length - 1]?.label ?? 'unknown'
}

/** The `prompt_len` label value for a prompt of `tokens` tokens. */
export function promptLengthBucket(tokens: number): string {
  return bucketOf(PROMPT_LENGTH_BUCKETS, tokens)
}

/** The `output_len` label value for a response of `tokens` output tokens. */
export function outputLengthBucket(tokens: number): string {
  return bucketOf(OUTPUT_LENGTH_BUCKETS, tokens)
}
