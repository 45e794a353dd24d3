/**
 * What every answer to bad input must be: never a 5xx of the gateway's own making (a 500,
 * or a 502/504 when the server behind it is healthy), and every refusal OpenAI-shaped:
 * JSON `{"error": {"message", "type", "code", "param"}}` with a code from src/errors.ts and
 * no stack. A 503 is allowed only as a capacity refusal that names its reason.
 */
import { ERRORS } from '../../../src/errors.js'

const CODES = new Set(Object.keys(ERRORS))
const CAPACITY = new Set([
  'ttft_slo',
  'queue_full',
  'queue_timeout',
  'kv_exhausted',
  'no_backend',
  'ttft_unreachable',
])

export interface Answer {
  readonly status: number
  readonly headers: Record<string, string | string[] | number | undefined>
  readonly body: string
}

/** Throws (with the request's description) when `a` breaks the contract; returns the code. */
export function checkAnswer(
  a: Answer,
  what: string,
  opts: { mustRefuse?: boolean } = {},
): string | undefined {
  const fail = (why: string): never => {
    throw new Error(`${why}\n  request: ${what.slice(0, 400)}\n  answer: ${a.status} ${a.body.slice(0, 400)}`)
  }
  if (a.status >= 500) {
    const reason = String(a.headers['x-gateway-reject-reason'] ?? '')
    if (a.status !== 503 || !CAPACITY.has(reason)) fail(`a ${a.status} from the gateway (reason '${reason}')`)
  }
  if (a.status < 400) {
    if (opts.mustRefuse === true) fail('bad input was not refused')
    return undefined
  }
  if (!String(a.headers['content-type'] ?? '').includes('application/json'))
    fail('a refusal that is not JSON')
  let parsed: unknown
  try {
    parsed = JSON.parse(a.body)
  } catch {
    return fail('a refusal whose body is not JSON')
  }
  const err = (parsed as { error?: Record<string, unknown> }).error
  if (err === undefined || typeof err !== 'object' || err === null) return fail('no error object')
  const keys = Object.keys(err).sort().join(',')
  if (keys !== 'code,message,param,type') fail(`error keys ${keys}`)
  if (typeof err.message !== 'string' || typeof err.type !== 'string')
    fail('message and type must be strings')
  if (/\bat .*\.(ts|js):\d+/.test(String(err.message))) fail('a stack in the message')
  const code = String(err.code)
  if (!CODES.has(code)) fail(`unknown error code ${code}`)
  if (code === 'GW_ERR_INTERNAL') fail('an internal error')
  return code
}
