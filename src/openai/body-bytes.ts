/**
 * The bytes of a JSON body as the upstream gets it, without encoding the whole prompt again.
 *
 * Stages rewrite only top-level fields of a body (model, max_tokens, stream_options, n,
 * reasoning_effort), each by assigning a new value. So the body's top-level values are
 * compared, by identity, with a shallow copy taken when it was parsed: when none changed,
 * the received bytes go as they are; when some did, only those values are encoded and
 * spliced into the received bytes (each occurrence of an existing key's value replaced, a
 * new key added before the closing brace); the prompt's bytes are copied, never encoded.
 * Anything else (a key deleted, a value set to undefined, bytes that are not UTF-8 or
 * start with a byte order mark, a scan that finds no object) is encoded whole with
 * JSON.stringify, as before.
 */
import { isUtf8 } from 'node:buffer'
import type { JsonBody } from './request-fields.js'

const QUOTE = 0x22
const BACKSLASH = 0x5c
const hasOwn = Object.prototype.hasOwnProperty

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}

export function skipSpace(b: Buffer, i: number): number {
  while (i < b.length && isSpace(b[i])) i++
  return i
}

/** Index just past the string that opens at `i` (a quote), or -1. */
export function stringEnd(b: Buffer, i: number): number {
  let from = i + 1
  for (;;) {
    const q = b.indexOf(QUOTE, from)
    if (q < 0) return -1
    let k = q - 1
    while (b[k] === BACKSLASH) k--
    // an even number of backslashes before it: the quote is not escaped
    if ((q - 1 - k) % 2 === 0) return q + 1
    from = q + 1
  }
}

/** Index just past the JSON value that starts at `i`, or -1 (the bytes were parsed once, so valid). */
function valueEnd(b: Buffer, i: number): number {
  const c = b[i]
  if (c === QUOTE) return stringEnd(b, i)
  if (c === 0x7b || c === 0x5b) {
    let depth = 0
    for (let j = i; j < b.length; j++) {
      const x = b[j]
      if (x === QUOTE) {
        j = stringEnd(b, j) - 1
        if (j < 0) return -1
      } else if (x === 0x7b || x === 0x5b) depth++
      else if (x === 0x7d || x === 0x5d) {
        if (--depth === 0) return j + 1
      }
    }
    return -1
  }
  let j = i
  while (j < b.length && b[j] !== 0x2c && b[j] !== 0x7d && b[j] !== 0x5d && !isSpace(b[j])) j++
  return j
}

interface Member {
  readonly key: string
  readonly from: number
  readonly to: number
}

/** The top-level members of the object in `b` (with each value's span), and its closing brace; undefined when `b` is no object. */
export function topLevelMembers(b: Buffer): { members: Member[]; close: number } | undefined {
  let i = skipSpace(b, 0)
  if (b[i] !== 0x7b) return undefined
  const members: Member[] = []
  i = skipSpace(b, i + 1)
  if (b[i] === 0x7d) return { members, close: i }
  for (;;) {
    if (b[i] !== QUOTE) return undefined
    const keyEnd = stringEnd(b, i)
    if (keyEnd < 0) return undefined
    const inner = b.subarray(i + 1, keyEnd - 1)
    const key = inner.includes(BACKSLASH)
      ? (JSON.parse(b.toString('utf8', i, keyEnd)) as string)
      : inner.toString('utf8')
    i = skipSpace(b, keyEnd)
    if (b[i] !== 0x3a) return undefined
    const from = skipSpace(b, i + 1)
    const to = valueEnd(b, from)
    if (to < 0) return undefined
    members.push({ key, from, to })
    i = skipSpace(b, to)
    if (b[i] === 0x7d) return { members, close: i }
    if (b[i] !== 0x2c) return undefined
    i = skipSpace(b, i + 1)
  }
}

/**
 * The body for the upstream: `raw` as it is when no top-level value of `body` differs from
 * `original` (the shallow copy taken at parse), else `raw` with the changed values spliced
 * in, else (see above) `body` encoded whole.
 */
export function upstreamBody(
  raw: Buffer | undefined,
  original: JsonBody | undefined,
  body: JsonBody,
): Buffer {
  if (raw === undefined || original === undefined) return Buffer.from(JSON.stringify(body))
  const changed: string[] = []
  let added = false
  for (const k in body) {
    const v = body[k]
    if (v === undefined) return Buffer.from(JSON.stringify(body))
    if (!hasOwn.call(original, k)) {
      changed.push(k)
      added = true
    } else if (v !== original[k]) changed.push(k)
  }
  for (const k in original) if (!hasOwn.call(body, k)) return Buffer.from(JSON.stringify(body))
  if (raw[0] === 0xef || !isUtf8(raw)) return Buffer.from(JSON.stringify(body))
  if (changed.length === 0) return raw
  const scan = topLevelMembers(raw)
  if (scan === undefined) return Buffer.from(JSON.stringify(body))
  const parts: Buffer[] = []
  let at = 0
  const wanted = new Set(changed)
  const found = new Set<string>()
  for (const m of scan.members) {
    if (!wanted.has(m.key)) continue
    found.add(m.key)
    parts.push(raw.subarray(at, m.from), Buffer.from(JSON.stringify(body[m.key])))
    at = m.to
  }
  for (const k of changed)
    if (hasOwn.call(original, k) && !found.has(k)) return Buffer.from(JSON.stringify(body))
  parts.push(raw.subarray(at, scan.close))
  if (added) {
    let comma = scan.members.length > 0
    for (const k of changed) {
      if (hasOwn.call(original, k)) continue
      parts.push(Buffer.from(`${comma ? ',' : ''}${JSON.stringify(k)}:${JSON.stringify(body[k])}`))
      comma = true
    }
  }
  parts.push(raw.subarray(scan.close))
  return Buffer.concat(parts)
}
