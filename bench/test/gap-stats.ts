/** Mean and coefficient of variation of the gaps between a sequence's arrivals (for the tests). */
export function gapStats(seq: readonly { readonly atMs: number }[]): { mean: number; cv: number } {
  const gaps = seq.map((a, i) => a.atMs - (i === 0 ? 0 : (seq[i - 1]?.atMs as number)))
  const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length
  const sd = Math.sqrt(gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / gaps.length)
  return { mean, cv: sd / mean }
}
