/**
 * The JSON routes' body parser: the body's bytes are kept as received next to the parsed
 * value, so forward can send those bytes on (body-bytes.ts) instead of encoding the whole
 * prompt again. It refuses what fastify's default parser refused, with the gateway's own
 * errors: an empty body (GW_ERR_EMPTY_BODY), text that is not JSON, and a body with an own
 * `__proto__` key or a `constructor` object with a `prototype` (prototype poisoning, as
 * secure-json-parse's `error` actions; both GW_ERR_INVALID_JSON). A UTF-8 byte order mark
 * is skipped, as there.
 */
import { GatewayError } from '../errors.js'

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

/** Parses a JSON body's bytes; throws the GatewayError to answer with. */
export function parseJsonBody(raw: Buffer): ReceivedJson {
  if (raw.length === 0) throw new GatewayError('GW_ERR_EMPTY_BODY', {})
  const bom = raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf
  let value: unknown
  try {
    value = JSON.parse(raw.toString('utf8', bom ? 3 : 0))
  } catch (err) {
    throw new GatewayError('GW_ERR_INVALID_JSON', {}, { cause: err })
  }
  if (poisoned(value)) throw new GatewayError('GW_ERR_INVALID_JSON', {})
  return new ReceivedJson(raw, value)
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
