/**
 * The checks a JSON body passes at the edge before any stage trusts it: not nested deeper
 * than MAX_JSON_DEPTH (V8 parses any depth, but serialising it again for the server
 * overflows the stack), and the fields the gateway itself reads of the right type: a
 * string `model`, a boolean `stream`, an object `stream_options`, and token counts that
 * are positive integers a server could honour. Other fields are the server's to judge.
 * Fuzzed in test/integration/reliability/bad-input-bodies.test.ts.
 */
import { GatewayError } from '../errors.js'
import { LazyText } from './lazy-text.js'
import type { JsonBody } from './request-fields.js'

/** Deepest nesting of arrays and objects accepted in a body (tool schemas nest a few dozen). */
export const MAX_JSON_DEPTH = 128

/** Largest token count accepted (a server's int32). */
export const MAX_TOKEN_COUNT = 2 ** 31 - 1

const TOKEN_FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const

/** Depth of the deepest array or object in `v` (1 for a flat object), walked without recursion. */
export function jsonDepth(v: unknown, stopAt = MAX_JSON_DEPTH + 1): number {
  let max = 0
  const stack: [unknown, number][] = [[v, 1]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number]
    if (typeof node !== 'object' || node === null || node instanceof LazyText) continue
    if (depth > max) max = depth
    if (max >= stopAt) return max
    const children = Array.isArray(node) ? node : Object.values(node)
    for (const c of children) if (typeof c === 'object' && c !== null) stack.push([c, depth + 1])
  }
  return max
}

function invalid(param: string, reason: string): GatewayError {
  return new GatewayError('GW_ERR_INVALID_PARAM', { param, reason }, { param })
}

function describe(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (typeof v === 'string') return `a string`
  if (typeof v === 'number') return String(v)
  return typeof v
}

/** The first problem of `body`, or undefined. */
export function checkBody(body: JsonBody): GatewayError | undefined {
  if (jsonDepth(body) > MAX_JSON_DEPTH)
    return new GatewayError('GW_ERR_INVALID_BODY', {
      reason: `it is nested deeper than ${MAX_JSON_DEPTH} levels`,
    })
  if (body.model !== undefined && typeof body.model !== 'string')
    return invalid('model', `expected a string, got ${describe(body.model)}`)
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    return invalid('stream', `expected true or false, got ${describe(body.stream)}`)
  const so = body.stream_options
  if (so !== undefined && so !== null && (typeof so !== 'object' || Array.isArray(so)))
    return invalid('stream_options', `expected an object, got ${describe(so)}`)
  for (const name of TOKEN_FIELDS) {
    const v = body[name]
    if (v === undefined || v === null) continue
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_TOKEN_COUNT)
      return invalid(name, `expected an integer from 1 to ${MAX_TOKEN_COUNT}, got ${describe(v)}`)
  }
  return undefined
}
