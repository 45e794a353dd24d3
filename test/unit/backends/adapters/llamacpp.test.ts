import { describe, expect, it } from 'vitest'
import { llamacppAdapter } from '../../../../src/backends/adapters/llamacpp.js'
import { fixture } from './fixture.js'

describe('llamacpp adapter', () => {
  it('reads deferred as waiting and processing as running', () => {
    expect(llamacppAdapter.parse(fixture('llamacpp.txt'))).toEqual({ waiting: 46, running: 4 })
    expect(llamacppAdapter.unsupported).toContain('kvUsage')
    expect(llamacppAdapter.unsupported).toContain('kvCapacityTokens')
  })

  it('reads the KV usage ratio of older builds when present', () => {
    expect(llamacppAdapter.parse(fixture('llamacpp-legacy.txt'))).toEqual({
      waiting: 0,
      running: 2,
      kvUsage: 0.734,
    })
  })

  it('needs both gauges; NaN is missing; several series are summed', () => {
    expect(llamacppAdapter.parse('llamacpp:requests_processing 1\n')).toBeUndefined()
    expect(
      llamacppAdapter.parse('llamacpp:requests_processing NaN\nllamacpp:requests_deferred 0\n'),
    ).toBeUndefined()
    const two =
      'llamacpp:requests_processing{model="a"} 1\nllamacpp:requests_processing{model="b"} 2\n' +
      'llamacpp:requests_deferred{model="a"} 0\nllamacpp:requests_deferred{model="b"} 5\n'
    expect(llamacppAdapter.parse(two)).toEqual({ waiting: 5, running: 3 })
  })
})
