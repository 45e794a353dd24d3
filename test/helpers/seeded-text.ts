/**
 * Text drawn from a seed (a linear congruential generator in base 36): equal seeds give
 * equal text, different seeds text that shares no prefix, for prompts whose blocks a test
 * hashes. `separator` goes after each draw (a space: words, as a tokenizer would see them).
 */
export function seededText(n: number, seed: number, separator = ' '): string {
  let s = ''
  let x = seed
  while (s.length < n) {
    x = (x * 1103515245 + 12345) % 2 ** 31
    s += `${x.toString(36)}${separator}`
  }
  return s.slice(0, n)
}
