/**
 * The JSON routes' body parser: the body's bytes are kept as received next to the parsed
 * value, so forward can send those bytes on (body-bytes.ts) instead of encoding the whole
 * prompt again. It refuses what fastify's default parser refused, with the gateway's own
 * errors: an empty body (GW_ERR_EMPTY_BODY), text that is not JSON, and a body with an own
 * `__proto__` key or a `constructor` object with a `prototype` (prototype poisoning, as
 * secure-json-parse's `error` actions; both GW_ERR_INVALID_JSON). A UTF-8 byte order mark
 * is skipped, as there.
 *
 * A large body (LAZY_BODY_BYTES or more, valid UTF-8) is parsed with its long prompt strings
 * left in its bytes (lazy-text.ts): each string of LAZY_STRING_BYTES or more is cut out by a
 * byte scan (native indexOf from quote to quote), the rest is JSON.parse'd with a placeholder
 * in its place, and the placeholder becomes a LazyText where admission reads prompts (a
 * message's content or its text parts, `prompt`, `input`, `instructions`), or the decoded
 * string anywhere else. The same bodies are refused: JSON.parse judges what is left, and
 * each cut string is checked as JSON.parse would (control characters, escapes).
 */
import { isUtf8 } from 'node:buffer'
import { randomBytes } from 'node:crypto'
import { GatewayError } from '../errors.js'
import { isRecord } from '../is-record.js'
import { skipSpace, stringEnd } from './body-bytes.js'
import { isObjectItem, LazyText } from './lazy-text.js'

/** Bodies of this many bytes or more are parsed with their long prompt strings left in bytes. */
export const LAZY_BODY_BYTES = 16 * 1024
/** Strings of this many bytes or more (quotes included) are cut out of such a body. */
export const LAZY_STRING_BYTES = 2 * 1024

/** What the JSON parser hands the routes: the bytes and their value. */
export class ReceivedJson {
  constructor(
    /** The body as received (a copy, not a view of a socket buffer). */
    readonly raw: Buffer,
    readonly value: unknown,
  ) {}
}

const hasOwn = Object.prototype.hasOwnProperty

/** Whether a parsed JSON value holds a prototype-poisoning key, walked without recursion. */
export function poisoned(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false
  const stack: object[] = [v]
  while (stack.length > 0) {
    const node = stack.pop() as Record<string, unknown>
    if (Array.isArray(node)) {
      for (const c of node) if (typeof c === 'object' && c !== null) stack.push(c)
      continue
    }
    if (hasOwn.call(node, '__proto__')) return true
    for (const k in node) {
      const c = node[k]
      if (typeof c !== 'object' || c === null) continue
      if (k === 'constructor' && hasOwn.call(c, 'prototype')) return true
      stack.push(c)
    }
  }
  return false
}

/** What parseJsonBody leaves in bytes (the defaults; tests make them small). */
export interface LazyLimits {
  readonly bodyBytes: number
  readonly stringBytes: number
}

const LAZY: LazyLimits = { bodyBytes: LAZY_BODY_BYTES, stringBytes: LAZY_STRING_BYTES }

/** Parses a JSON body's bytes; throws the GatewayError to answer with. */
export function parseJsonBody(raw: Buffer, lazy: LazyLimits = LAZY): ReceivedJson {
  if (raw.length === 0) throw new GatewayError('GW_ERR_EMPTY_BODY', {})
  const bom = raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf
  const start = bom ? 3 : 0
  const spans = raw.length >= lazy.bodyBytes && isUtf8(raw) ? longStrings(raw, start, lazy.stringBytes) : []
  let value: unknown
  try {
    value = JSON.parse(spans.length === 0 ? raw.toString('utf8', start) : withMarks(raw, start, spans))
  } catch (err) {
    throw new GatewayError('GW_ERR_INVALID_JSON', {}, { cause: err })
  }
  // judged before the cut strings are put back: placeholders are plain strings
  if (poisoned(value)) throw new GatewayError('GW_ERR_INVALID_JSON', {})
  if (spans.length > 0) adopt(value, lazyTexts(raw, spans))
  return new ReceivedJson(raw, value)
}

/** A string cut out of the bytes: its opening quote, and just past its closing one. */
type Span = readonly [number, number]

/** The string values (not keys) of `minBytes` or more in `raw`, in order; none when a string does not end. */
function longStrings(raw: Buffer, start: number, minBytes: number): Span[] {
  const spans: Span[] = []
  // outside a string a quote opens one, so hopping from quote to quote finds every string
  for (let i = raw.indexOf(0x22, start); i >= 0; ) {
    const end = stringEnd(raw, i)
    if (end < 0) return []
    if (end - i >= minBytes && raw[skipSpace(raw, end)] !== 0x3a) spans.push([i, end])
    i = raw.indexOf(0x22, end)
  }
  return spans
}

/**
 * The placeholder of the k-th cut string, as JSON text (`\u0000` escaped): MARK + k. No
 * client sends it: the nonce is this process's.
 */
const MARK = `\\u0000lazy-${randomBytes(12).toString('base64url')}-`

/** The body's text with each cut string replaced by its placeholder. */
function withMarks(raw: Buffer, start: number, spans: readonly Span[]): string {
  let text = ''
  let at = start
  for (let k = 0; k < spans.length; k++) {
    const [from, to] = spans[k]!
    text += `${raw.toString('utf8', at, from)}"${MARK}${k}"`
    at = to
  }
  return text + raw.toString('utf8', at)
}

/** Each cut string checked as JSON.parse would; throws GW_ERR_INVALID_JSON for one it would refuse. */
function lazyTexts(raw: Buffer, spans: readonly Span[]): LazyText[] {
  return spans.map(([from, to]) => {
    const t = LazyText.of(raw, from + 1, to - 1)
    if (t === undefined) throw new GatewayError('GW_ERR_INVALID_JSON', {})
    return t
  })
}

/** The placeholder as a parsed string. */
const MARK_PREFIX = JSON.parse(`"${MARK}"`) as string

/** The cut string a placeholder stands for, or undefined when `v` is none. */
function marked(v: unknown, texts: readonly LazyText[]): LazyText | undefined {
  if (typeof v !== 'string' || !v.startsWith(MARK_PREFIX)) return undefined
  return texts[Number(v.slice(MARK_PREFIX.length))]
}

/**
 * Puts the cut strings back in `value`: as LazyText where admission reads prompts, decoded
 * anywhere else (so every other reader sees the strings JSON.parse makes).
 */
function adopt(value: unknown, texts: readonly LazyText[]): void {
  let placed = 0
  /** In `o[k]` (an object's member or an array's element): a placeholder becomes its LazyText. */
  const keep = (o: Record<string, unknown> | unknown[], k: string | number): void => {
    const t = marked((o as Record<string | number, unknown>)[k], texts)
    if (t === undefined) return
    ;(o as Record<string | number, unknown>)[k] = t
    placed++
  }
  const content = (m: unknown): void => {
    if (!isObjectItem(m)) return
    keep(m, 'content')
    if (Array.isArray(m.content)) for (const part of m.content) if (isRecord(part)) keep(part, 'text')
  }
  if (!isRecord(value)) {
    materialize(value, texts)
    return
  }
  if (Array.isArray(value.messages)) for (const m of value.messages) content(m)
  keep(value, 'prompt')
  if (Array.isArray(value.prompt)) for (let i = 0; i < value.prompt.length; i++) keep(value.prompt, i)
  keep(value, 'input')
  if (Array.isArray(value.input)) {
    for (let i = 0; i < value.input.length; i++) {
      keep(value.input, i)
      content(value.input[i])
    }
  }
  keep(value, 'instructions')
  if (placed < texts.length) materialize(value, texts)
}

/** Every placeholder left in `value` replaced by its decoded string (walked without recursion). */
function materialize(value: unknown, texts: readonly LazyText[]): void {
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const node = stack.pop()
    if (typeof node !== 'object' || node === null || node instanceof LazyText) continue
    const o = node as Record<string, unknown>
    for (const k of Object.keys(o)) {
      const t = marked(o[k], texts)
      if (t !== undefined) o[k] = t.toString()
      else stack.push(o[k])
    }
  }
}

/** As a fastify content-type parser (`parseAs: 'buffer'`). */
export function jsonBodyParser(
  _req: unknown,
  body: Buffer | string,
  done: (err: Error | null, body?: unknown) => void,
): void {
  try {
    done(null, parseJsonBody(typeof body === 'string' ? Buffer.from(body) : body))
  } catch (err) {
    done(err as Error)
  }
}
