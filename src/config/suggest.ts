/**
 * "Did you mean ...?": the nearest of a few known names to a misspelt one, by edit
 * distance (Levenshtein with adjacent transpositions counted as one edit).
 */

export function editDistance(a: string, b: string): number {
  // rows i-2, i-1 and i of the (a.length + 1) x (b.length + 1) table
  let older: number[] = []
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, older[j - 2]! + 1)
      row.push(d)
    }
    older = prev
    prev = row
  }
  return prev[b.length]!
}

/**
 * The known name closest to `typed`, when it is close enough to be a slip of the keyboard
 * (at most a third of its letters wrong, at least one), differs only in case, or is the
 * start of it (`fallback` for `fallback_model`).
 */
export function nearest(typed: string, known: Iterable<string>): string | undefined {
  const limit = Math.max(1, Math.floor(typed.length / 3))
  const lower = typed.toLowerCase()
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const k of known) {
    if (k === typed) continue
    const kl = k.toLowerCase()
    const d = kl === lower ? 0 : lower.length >= 4 && kl.startsWith(lower) ? 1 : editDistance(typed, k)
    if (d < bestDistance) {
      best = k
      bestDistance = d
    }
  }
  return bestDistance <= limit ? best : undefined
}
