import { describe, expect, it } from 'vitest'
import { sglangAdapter } from '../../../../src/backends/adapters/sglang.js'
import { fixture } from './fixture.js'

describe('sglang adapter', () => {
  it('sums data-parallel ranks and counts tensor-parallel copies once', () => {
    expect(sglangAdapter.parse(fixture('sglang.txt'))).toEqual({
      waiting: 10,
      running: 38,
      kvUsage: expect.closeTo(0.58, 10),
      kvCapacityTokens: 2 * 144_870,
      preemptionsTotal: 5,
    })
    expect(sglangAdapter.unsupported).toContain('prefixCache')
  })

  it('reads the older model_name-only format', () => {
    expect(sglangAdapter.parse(fixture('sglang-legacy.txt'))).toEqual({
      waiting: 2826,
      running: 162,
      kvUsage: 0.28,
    })
  })

  it('sums several model_name series', () => {
    const text =
      'sglang:num_queue_reqs{model_name="a",tp_rank="0"} 1\nsglang:num_queue_reqs{model_name="b",tp_rank="0"} 2\n' +
      'sglang:num_running_reqs{model_name="a",tp_rank="0"} 4\nsglang:num_running_reqs{model_name="b",tp_rank="0"} 5\n'
    expect(sglangAdapter.parse(text)).toEqual({ waiting: 3, running: 9 })
  })

  it('an exposition without the lazily created gauges is an idle server; NaN is missing', () => {
    expect(
      sglangAdapter.parse('# HELP sglang:prompt_tokens_total x\nsglang:prompt_tokens_total 0\n'),
    ).toEqual({
      waiting: 0,
      running: 0,
    })
    expect(sglangAdapter.parse('')).toEqual({ waiting: 0, running: 0 })
    expect(
      sglangAdapter.parse('sglang:num_queue_reqs NaN\nsglang:num_running_reqs 2\nsglang:token_usage NaN\n'),
    ).toEqual({
      waiting: 0,
      running: 2,
    })
  })
})
