import { describe, expect, it } from 'vitest'
import { checkBody, jsonDepth, MAX_JSON_DEPTH, MAX_TOKEN_COUNT } from '../../../src/openai/body-checks.js'

const nested = (d: number): unknown => JSON.parse(`${'['.repeat(d - 1)}{}${']'.repeat(d - 1)}`)

describe('body checks', () => {
  it('measures depth without recursion, even 100,000 levels deep', () => {
    expect(jsonDepth({})).toBe(1)
    expect(jsonDepth({ a: [1, { b: 2 }] })).toBe(3)
    expect(jsonDepth(nested(100_000), Number.POSITIVE_INFINITY)).toBe(100_000)
  })

  it('accepts the deepest nesting allowed and refuses one level more', () => {
    expect(checkBody({ x: nested(MAX_JSON_DEPTH - 1) })).toBeUndefined()
    expect(checkBody({ x: nested(MAX_JSON_DEPTH) })?.code).toBe('GW_ERR_INVALID_BODY')
  })

  it('refuses token counts that are not integers from 1 to 2^31-1, naming the field', () => {
    for (const v of [0, -1, 1.5, 5e-323, 1e300, MAX_TOKEN_COUNT + 1, '5', true, [], {}]) {
      const err = checkBody({ max_tokens: v })
      expect(err?.code, String(v)).toBe('GW_ERR_INVALID_PARAM')
      expect(err?.param).toBe('max_tokens')
    }
    expect(
      checkBody({ max_completion_tokens: 1, max_output_tokens: MAX_TOKEN_COUNT, max_tokens: null }),
    ).toBeUndefined()
  })

  it('refuses a model, stream or stream_options of the wrong type, echoing no client text', () => {
    expect(checkBody({ model: 5 })?.param).toBe('model')
    expect(checkBody({ stream: 'yes' })?.param).toBe('stream')
    expect(checkBody({ stream_options: [] })?.param).toBe('stream_options')
    const err = checkBody({ stream: '<script>secret</script>' })
    expect(err?.message).not.toContain('secret')
    expect(checkBody({ model: 'm', stream: true, stream_options: { include_usage: true } })).toBeUndefined()
  })
})
