import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ERRORS, errorHeaders, GatewayError, MAX_RETRY_AFTER_MS } from '../../src/errors.js'

const doc = readFileSync(join(import.meta.dirname, '../../docs/errors.md'), 'utf8')
const rows = new Map(
  [
    ...doc.matchAll(
      /^\| `(GW_ERR_\w+)` \| (\d+) \| `(\w+)` \| `(\w+)` \| (?:`(\w+)`)? *\| (yes|no)[^|]*\| (.*) \|$/gm,
    ),
  ].map((m) => [
    m[1],
    { status: Number(m[2]), type: m[3], outcome: m[4], reason: m[5], retry: m[6] === 'yes', message: m[7] },
  ]),
)

describe('errors table', () => {
  it('documents every error code exactly as defined, and nothing else', () => {
    expect([...rows.keys()].sort()).toEqual(Object.keys(ERRORS).sort())
    for (const [code, def] of Object.entries(ERRORS)) {
      const row = rows.get(code)
      expect(row, code).toEqual({
        status: def.status,
        type: def.type,
        outcome: def.outcome,
        reason: 'rejectReason' in def ? def.rejectReason : undefined,
        retry: def.retryable,
        message: def.message,
      })
    }
  })

  it('fills the message template and keeps the cause out of the body', () => {
    const cause = new Error('connect ECONNREFUSED 10.1.2.3:8000')
    const err = new GatewayError('GW_ERR_MODEL_NOT_FOUND', { model: 'gpt-x' }, { cause, param: 'model' })
    expect(err.toBody()).toEqual({
      error: {
        message: "The model 'gpt-x' does not exist or is not served here.",
        type: 'not_found_error',
        code: 'GW_ERR_MODEL_NOT_FOUND',
        param: 'model',
      },
    })
    expect(err.toJSON()).not.toContain('10.1.2.3')
    expect(err.cause).toBe(cause)
  })

  it('caps Retry-After at 60 s and sends it in seconds and milliseconds', () => {
    const h = errorHeaders(new GatewayError('GW_ERR_TTFT_SLO', {}, { retryAfterMs: 123_456 }))
    expect(h['retry-after-ms']).toBe(String(MAX_RETRY_AFTER_MS))
    expect(h['retry-after']).toBe('60')
    expect(h['x-gateway-reject-reason']).toBe('ttft_slo')
    const short = errorHeaders(new GatewayError('GW_ERR_QUEUE_FULL', {}, { retryAfterMs: 1_200 }))
    expect(short['retry-after-ms']).toBe('1200')
    expect(short['retry-after']).toBe('2')
    expect(errorHeaders(new GatewayError('GW_ERR_INVALID_JSON'))['x-should-retry']).toBe('false')
  })
})
