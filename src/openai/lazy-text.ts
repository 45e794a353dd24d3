/**
 * A long prompt string left in the request's bytes instead of decoded (issue 18: a 200 KB
 * body cost its decoding to a string, JSON.parse's copy of that string, and the collection
 * of both, about 2.4 ms of added latency at 100 req/s on the bench machine; what admission
 * reads of a prompt is its length and, for prefix pricing, its UTF-16 code units in order).
 *
 * A LazyText is a JSON string's content, validated (no raw control character, every escape
 * well formed) in `raw` between `from` and `to` (the quotes excluded), with its `length` in
 * UTF-16 code units, as the decoded string's `.length` would be. `toString()` and
 * `toJSON()` decode it, so a body that must be encoded whole still is, byte for byte as
 * JSON.stringify of the decoded string. Only valid UTF-8 bodies are left in bytes (the
 * parser decodes any other eagerly), so the code units read here are those of the string
 * JSON.parse would have made.
 */
import { isAscii } from 'node:buffer'

const BACKSLASH = 0x5c

/** The UTF-16 code unit a one-character escape stands for (`\n` -> 10), or -1. */
function simpleEscape(c: number | undefined): number {
  switch (c) {
    case 0x22: // "
    case 0x5c: // \
    case 0x2f: // /
      return c
    case 0x62: // b
      return 8
    case 0x66: // f
      return 12
    case 0x6e: // n
      return 10
    case 0x72: // r
      return 13
    case 0x74: // t
      return 9
    default:
      return -1
  }
}

function hexDigit(c: number | undefined): number {
  if (c === undefined) return -1
  if (c >= 0x30 && c <= 0x39) return c - 0x30
  const l = c | 0x20
  if (l >= 0x61 && l <= 0x66) return l - 0x61 + 10
  return -1
}

/** The code unit of the `\uXXXX` escape whose `u` is at `i`, or -1. */
function unicodeEscape(b: Buffer, i: number): number {
  let v = 0
  for (let k = 1; k <= 4; k++) {
    const d = hexDigit(b[i + k])
    if (d < 0) return -1
    v = (v << 4) | d
  }
  return v
}

/** Whether a byte below 0x20 (a raw control character, not allowed in a JSON string) is in [from, to). */
function hasControl(b: Buffer, from: number, to: number): boolean {
  let i = from
  // byte by byte up to a 4-byte boundary, then a word at a time: a byte below 0x20 in x
  // makes (x - 0x20202020) & ~x & 0x80808080 non-zero ("hasless", exact for presence)
  const head = Math.min(to, from + ((4 - ((b.byteOffset + from) & 3)) & 3))
  for (; i < head; i++) if (b[i]! < 0x20) return true
  const words = (to - i) >>> 2
  if (words > 0) {
    const w = new Uint32Array(b.buffer, b.byteOffset + i, words)
    for (let k = 0; k < words; k++) {
      const x = w[k]!
      if (((x - 0x20202020) & ~x & 0x80808080) !== 0) return true
    }
    i += words << 2
  }
  for (; i < to; i++) if (b[i]! < 0x20) return true
  return false
}

export class LazyText {
  private constructor(
    readonly raw: Buffer,
    /** The content's first byte (just past the opening quote). */
    readonly from: number,
    /** Just past the content's last byte (the closing quote). */
    readonly to: number,
    /** UTF-16 code units, as the decoded string's length. */
    readonly length: number,
    /** Every byte below 0x80. */
    readonly ascii: boolean,
    /** Holds a backslash escape. */
    readonly escaped: boolean,
  ) {}

  /**
   * The content between the quotes at `from - 1` and `to` (`to` found by the caller as the
   * first unescaped quote), or undefined when it is not a valid JSON string's content.
   */
  static of(raw: Buffer, from: number, to: number): LazyText | undefined {
    if (hasControl(raw, from, to)) return undefined
    const ascii = isAscii(raw.subarray(from, to))
    // code units without escapes: bytes, or for UTF-8 the lead bytes (a 4-byte one makes two)
    let units = to - from
    if (!ascii) {
      units = 0
      for (let i = from; i < to; i++) {
        const c = raw[i]!
        if ((c & 0xc0) !== 0x80) units += c >= 0xf0 ? 2 : 1
      }
    }
    // each escape is one code unit written in 2 bytes, or 6 for \uXXXX
    let escaped = false
    for (let i = raw.indexOf(BACKSLASH, from); i >= 0 && i < to; i = raw.indexOf(BACKSLASH, i)) {
      escaped = true
      const e = raw[i + 1]
      if (e === 0x75) {
        if (i + 6 > to || unicodeEscape(raw, i + 1) < 0) return undefined
        units -= 5
        i += 6
      } else {
        if (simpleEscape(e) < 0) return undefined
        units -= 1
        i += 2
      }
    }
    return new LazyText(raw, from, to, units, ascii, escaped)
  }

  toString(): string {
    if (!this.escaped) return this.raw.toString('utf8', this.from, this.to)
    return JSON.parse(this.raw.toString('utf8', this.from - 1, this.to + 1)) as string
  }

  toJSON(): string {
    return this.toString()
  }

  /** Calls `unit` with the code unit of the escape whose backslash is at `i`; returns the index past it. */
  escapeAt(i: number, unit: (c: number) => void): number {
    const e = this.raw[i + 1]
    if (e === 0x75) {
      unit(unicodeEscape(this.raw, i + 1))
      return i + 6
    }
    unit(simpleEscape(e))
    return i + 2
  }

  /**
   * Calls `unit` with each UTF-16 code unit in order, from the bytes (escapes and UTF-8
   * decoded), as `for (i) unit(s.charCodeAt(i))` over the decoded string would.
   */
  forEachUnit(unit: (c: number) => void): void {
    const b = this.raw
    const to = this.to
    let i = this.from
    while (i < to) {
      const c = b[i]!
      if (c === BACKSLASH) i = this.escapeAt(i, unit)
      else if (c < 0x80) {
        unit(c)
        i++
      } else if (c < 0xe0) {
        unit(((c & 0x1f) << 6) | (b[i + 1]! & 0x3f))
        i += 2
      } else if (c < 0xf0) {
        unit(((c & 0x0f) << 12) | ((b[i + 1]! & 0x3f) << 6) | (b[i + 2]! & 0x3f))
        i += 3
      } else {
        const cp =
          (((c & 0x07) << 18) | ((b[i + 1]! & 0x3f) << 12) | ((b[i + 2]! & 0x3f) << 6) | (b[i + 3]! & 0x3f)) -
          0x10000
        unit(0xd800 + (cp >> 10))
        unit(0xdc00 + (cp & 0x3ff))
        i += 4
      }
    }
  }
}

/** Prompt text as the body holds it: a string, or a long one left in bytes. */
export type Text = string | LazyText

export function isText(v: unknown): v is Text {
  return typeof v === 'string' || v instanceof LazyText
}

/**
 * A JSON object, not a string left in the bytes (isRecord is true for a LazyText): for the
 * arrays whose elements may be either (the Responses API's `input`).
 */
export function isObjectItem(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof LazyText)
}
