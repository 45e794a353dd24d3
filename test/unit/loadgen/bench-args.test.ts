/** `slo-gateway bench` argument parsing for the search's bracket step. */
import { describe, expect, it } from 'vitest'
import { parseBenchArgs } from '../../../src/loadgen/bench-args.js'

const base = ['--target', 'http://127.0.0.1:8080', '--workload', 'w.yaml']

describe('bench --search-step', () => {
  it('goes to the search with --find-max-goodput', () => {
    expect(
      parseBenchArgs([...base, '--find-max-goodput', '--rate', '10', '--search-step', '1.15']),
    ).toMatchObject({
      findMaxGoodput: true,
      step: 1.15,
      mode: { rate: 10 },
    })
  })

  it('refuses a factor of 1 or less, and a step without a search', () => {
    expect(() => parseBenchArgs([...base, '--find-max-goodput', '--search-step', '1'])).toThrow(
      "--search-step: expected a factor > 1, got '1'",
    )
    expect(() => parseBenchArgs([...base, '--search-step', '1.5'])).toThrow(
      '--search-step goes with --sweep or --find-max-goodput',
    )
    expect(() => parseBenchArgs([...base, '--sweep', '1,2', '--search-step', '1.5'])).toThrow(
      '--search-step goes with --find-max-goodput, not --sweep',
    )
  })
})
