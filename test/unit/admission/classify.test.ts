import { describe, expect, it } from 'vitest'
import { classify } from '../../../src/admission/classify.js'
import { GatewayError } from '../../../src/errors.js'

const known = new Set(['interactive', 'batch', 'gold'])

describe('classify', () => {
  it('takes the x-priority header first', () => {
    expect(classify('batch', undefined, undefined, known)).toBe('batch')
    expect(classify(' Gold ', 'flex', 'batch', known)).toBe('gold')
  })
  it('then service_tier: flex means batch', () => {
    expect(classify(undefined, 'flex', undefined, known)).toBe('batch')
    expect(classify('', 'flex', 'gold', known)).toBe('batch')
  })
  it("then the tenant's default, then interactive", () => {
    expect(classify(undefined, 'auto', 'gold', known)).toBe('gold')
    expect(classify(undefined, undefined, undefined, known)).toBe('interactive')
  })
  it('refuses an unknown class with a 400 naming the known ones', () => {
    const err = classify('urgent', undefined, undefined, known)
    expect(err).toBeInstanceOf(GatewayError)
    expect((err as GatewayError).status).toBe(400)
    expect((err as GatewayError).code).toBe('GW_ERR_UNKNOWN_CLASS')
    expect((err as GatewayError).message).toContain('interactive, batch, gold')
  })
})
