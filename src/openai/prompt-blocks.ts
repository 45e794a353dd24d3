/**
 * A prompt cut into the engine's KV blocks and hashed, chained, once per request at the
 * edge (the prefix index's input: src/backends/prefix-index.ts).
 *
 * There is no tokenizer, so a block of `blockSize` tokens is measured in characters the
 * way the prompt-token estimate counts them (token-estimator.ts): content characters at
 * the model's characters-per-token ratio, plus MESSAGE_OVERHEAD_TOKENS per chat message
 * for its header. The prompt is rendered as a chat template would: the tool definitions
 * first (they change the prefix but count no characters, as the estimate counts none),
 * then every message in order, its role and then its text parts (a non-text part mixes in
 * its type and URL). A completion's prompt is its text, or its token ids (one token each).
 * Several prompts in one request have no single prefix: no blocks.
 *
 * The hash is two 32-bit multiplicative lanes over UTF-16 code units (FNV-1a style),
 * never reset between blocks, so block i's hash covers everything before it, as vLLM's
 * do; each block's key is both lanes finalised (murmur3's fmix) into a 53-bit integer. One
 * pass, linear in the prompt, one Float64Array per request. A collision (about 2^-53 per
 * pair) can only make a prediction wrong, never a response.
 */

import type { PromptBlocks } from '../backends/prefix-index.js'
import { isRecord } from '../is-record.js'
import { isObjectItem, isText, type LazyText, type Text } from './lazy-text.js'
import type { JsonBody } from './request-fields.js'
import { MESSAGE_OVERHEAD_TOKENS } from './token-estimator.js'

/** How prompts are cut: one per pool while its block size and the characters-per-token ratio hold. */
export interface BlockGeometry {
  readonly key: string
  readonly blockSize: number
  /** The characters-per-token ratio it was cut at (snapped to quarters). */
  readonly charsPerToken: number
  readonly unitsPerBlock: number
  readonly unitsPerHeader: number
  readonly unitsPerTokenId: number
}

export function blockGeometry(blockSize: number, charsPerToken: number): BlockGeometry {
  const cpt = Math.max(0.25, Math.round(charsPerToken * 4) / 4)
  const size = Math.max(1, Math.floor(blockSize))
  return {
    key: `${size}x${cpt}`,
    blockSize: size,
    charsPerToken: cpt,
    unitsPerBlock: Math.max(1, Math.round(size * cpt)),
    unitsPerHeader: Math.round(MESSAGE_OVERHEAD_TOKENS * cpt),
    unitsPerTokenId: Math.max(1, Math.round(cpt)),
  }
}

const TWO_POW_21 = 2_097_152

function fmix(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return h ^ (h >>> 16)
}

class BlockHasher {
  h1 = 0x811c9dc5
  h2 = 0x2f8a3e1b
  units = 0
  next: number
  count = 0
  out: Float64Array

  constructor(
    readonly g: BlockGeometry,
    expectedUnits: number,
  ) {
    this.next = g.unitsPerBlock
    this.out = new Float64Array(Math.max(1, Math.ceil(expectedUnits / g.unitsPerBlock) + 1))
  }

  private mix(c: number): void {
    this.h1 = Math.imul(this.h1 ^ c, 0x01000193)
    const h = Math.imul(this.h2 ^ c, 0x5bd1e995)
    this.h2 = h ^ (h >>> 15)
  }

  private emit(): void {
    if (this.count === this.out.length) {
      const grown = new Float64Array(this.out.length * 2)
      grown.set(this.out)
      this.out = grown
    }
    const a = fmix(this.h1 ^ Math.imul(this.count + 1, 0x9e3779b1)) >>> 0
    const b = fmix(this.h2 + this.count) >>> 0
    this.out[this.count++] = a * TWO_POW_21 + (b >>> 11)
    this.next += this.g.unitsPerBlock
  }

  /** Text that counts: one unit per code unit. */
  text(s: string): void {
    const n = s.length
    let i = 0
    // the lanes in locals: the inner loop is the hot path (mix(), inlined by hand)
    let h1 = this.h1
    let h2 = this.h2
    while (i < n) {
      const end = Math.min(n, i + (this.next - this.units))
      const from = i
      for (; i < end; i++) {
        const c = s.charCodeAt(i)
        h1 = Math.imul(h1 ^ c, 0x01000193)
        const h = Math.imul(h2 ^ c, 0x5bd1e995)
        h2 = h ^ (h >>> 15)
      }
      this.units += end - from
      if (this.units >= this.next) {
        this.h1 = h1
        this.h2 = h2
        this.emit()
      }
    }
    this.h1 = h1
    this.h2 = h2
  }

  /**
   * The bytes [from, to) of `b`, each byte one unit (ASCII without escapes): as text() does.
   * text()'s loop written again over bytes, on purpose: sharing one loop through a reader of
   * the i-th unit costs a call per unit in the hottest loop of a long prompt.
   */
  private bytes(b: Buffer, from: number, to: number): void {
    let i = from
    let h1 = this.h1
    let h2 = this.h2
    while (i < to) {
      const end = Math.min(to, i + (this.next - this.units))
      const start = i
      for (; i < end; i++) {
        const c = b[i]!
        h1 = Math.imul(h1 ^ c, 0x01000193)
        const h = Math.imul(h2 ^ c, 0x5bd1e995)
        h2 = h ^ (h >>> 15)
      }
      this.units += end - start
      if (this.units >= this.next) {
        this.h1 = h1
        this.h2 = h2
        this.emit()
      }
    }
    this.h1 = h1
    this.h2 = h2
  }

  /** One unit of text. */
  private unit(c: number): void {
    this.mix(c)
    if (++this.units >= this.next) this.emit()
  }

  /** Text left in the body's bytes: the same units, so the same blocks, as its decoded string. */
  lazy(t: LazyText): void {
    if (!t.ascii) {
      t.forEachUnit((c) => this.unit(c))
      return
    }
    // ASCII: runs of bytes, each escape one unit between them
    const b = t.raw
    let at = t.from
    while (at < t.to) {
      const k = t.escaped ? b.indexOf(0x5c, at) : -1
      const runEnd = k < 0 || k >= t.to ? t.to : k
      this.bytes(b, at, runEnd)
      if (runEnd === t.to) break
      at = t.escapeAt(k, (c) => this.unit(c))
    }
  }

  /** Prompt text as the body holds it. */
  piece(s: Text): void {
    if (typeof s === 'string') this.text(s)
    else this.lazy(s)
  }

  /** Text that shapes the prefix but counts no units (roles, tools, non-text parts). */
  opaque(s: string): void {
    for (let i = 0; i < s.length; i++) this.mix(s.charCodeAt(i))
  }

  /** A message header: its role, then the template's overhead in units. */
  header(role: string): void {
    this.mix(1)
    this.opaque(role)
    this.mix(2)
    this.advance(this.g.unitsPerHeader)
  }

  tokenId(id: number): void {
    this.mix(id & 0xffff)
    this.mix((id >>> 16) & 0xffff)
    this.advance(this.g.unitsPerTokenId)
  }

  private advance(units: number): void {
    this.units += units
    while (this.units >= this.next) this.emit()
  }

  content(c: unknown): void {
    if (isText(c)) {
      this.piece(c)
      return
    }
    if (!Array.isArray(c)) return
    for (const part of c) {
      if (!isRecord(part)) continue
      if (isText(part.text)) this.piece(part.text)
      else {
        this.mix(3)
        if (typeof part.type === 'string') this.opaque(part.type)
        const url = isRecord(part.image_url) ? part.image_url.url : undefined
        if (typeof url === 'string') this.opaque(url)
      }
    }
  }

  message(m: unknown): void {
    if (!isRecord(m)) {
      this.header('')
      return
    }
    this.header(typeof m.role === 'string' ? m.role : '')
    this.content(m.content)
  }

  done(): PromptBlocks {
    return {
      geometry: this.g.key,
      hashes: this.out,
      count: this.count,
      unitsPerBlock: this.g.unitsPerBlock,
      totalUnits: this.units,
    }
  }
}

/**
 * The prompt's blocks in `g`, or undefined when it has no single prefix (several prompts)
 * or none at all. `promptChars` and `messages` (the ticket's, from promptSize) only size
 * the buffer.
 */
export function promptBlocks(
  body: JsonBody,
  g: BlockGeometry,
  promptChars: number,
  messages: number,
): PromptBlocks | undefined {
  const h = new BlockHasher(g, promptChars + messages * g.unitsPerHeader)
  if (Array.isArray(body.tools) && body.tools.length > 0) h.opaque(JSON.stringify(body.tools))
  const msgs = body.messages
  if (Array.isArray(msgs)) {
    for (const m of msgs) h.message(m)
    return h.done()
  }
  const input = body.input
  if (isText(body.instructions)) {
    h.header('system')
    h.piece(body.instructions)
  }
  if (Array.isArray(input) && input.some(isObjectItem)) {
    for (const item of input) {
      if (isText(item)) {
        h.header('user')
        h.piece(item)
      } else h.message(item)
    }
    return h.done()
  }
  if (isText(input)) {
    h.piece(input)
    return h.done()
  }
  let prompt = body.prompt
  if (Array.isArray(prompt) && prompt.length > 0 && typeof prompt[0] !== 'number') {
    if (prompt.length !== 1) return undefined // several prompts
    prompt = prompt[0]
  }
  if (isText(prompt)) h.piece(prompt)
  else if (Array.isArray(prompt)) {
    for (const id of prompt) if (typeof id === 'number') h.tokenId(id)
  } else return undefined
  return h.done()
}
