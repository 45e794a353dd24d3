/**
 * Block hashes for prefix caching. There are no real tokens, so a block of `blockSize` tokens is
 * the next `blockSize · 4` characters of the prompt's canonical text (or `blockSize` token ids).
 * Each hash covers the whole prefix up to the end of its block (two FNV-1a lanes, chained), so equal
 * hashes mean equal prefixes, as vLLM's block hashes do.
 */
export function blockHashes(
  source: string | readonly number[],
  blockSize: number,
  maxBlocks: number,
): string[] {
  const unit = typeof source === 'string' ? blockSize * 4 : blockSize
  const n = Math.min(maxBlocks, Math.floor(source.length / unit))
  const out: string[] = new Array<string>(n)
  let h1 = 0x811c9dc5
  let h2 = 0x01000193 ^ 0x5bd1e995
  let i = 0
  for (let b = 0; b < n; b++) {
    const end = (b + 1) * unit
    for (; i < end; i++) {
      const c = typeof source === 'string' ? source.charCodeAt(i) : source[i]!
      h1 = Math.imul(h1 ^ c, 0x01000193)
      h2 = Math.imul(h2 ^ (c + 0x9e37), 0x0100019d)
    }
    out[b] = `${(h1 >>> 0).toString(36)}.${(h2 >>> 0).toString(36)}.${b}`
  }
  return out
}
