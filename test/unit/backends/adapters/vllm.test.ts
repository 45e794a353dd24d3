import { describe, expect, it } from 'vitest'
import { vllmAdapter } from '../../../../src/backends/adapters/vllm.js'
import { fixture } from './fixture.js'

describe('vllm (V1) adapter', () => {
  it('sums counts and averages KV usage over engine cores', () => {
    expect(vllmAdapter.parse(fixture('vllm-v1.txt'))).toEqual({
      waiting: 4,
      running: 20,
      kvUsage: 0.5,
      kvCapacityTokens: 2 * 81767 * 16,
      blockSize: 16,
      prefixCaching: true,
      preemptionsTotal: 7,
      prefixCacheQueriesTotal: 200_000,
      prefixCacheHitsTotal: 80_000,
    })
    expect(vllmAdapter.unsupported).toEqual([])
  })

  it('sums several model_name series and prefers the kv_cache_size_tokens label', () => {
    expect(vllmAdapter.parse(fixture('vllm-v1-two-models.txt'))).toEqual({
      waiting: 5,
      running: 6,
      kvUsage: expect.closeTo(0.2, 10),
      kvCapacityTokens: 50_000, // the second series says None: not a number, not zero
      blockSize: 16, // enable_prefix_caching not said: prefixCaching left out
    })
  })

  it('falls back to gpu_cache_usage_perc (vLLM before 0.9)', () => {
    const text = fixture('vllm-v1.txt').replaceAll('vllm:kv_cache_usage_perc', 'vllm:something_else')
    expect(vllmAdapter.parse(text)?.kvUsage).toBe(0.5)
  })

  it('leaves out what is missing and fails when the counts are missing', () => {
    const onlyCounts =
      'vllm:num_requests_running{model_name="m"} 1\nvllm:num_requests_waiting{model_name="m"} 0\n'
    expect(vllmAdapter.parse(onlyCounts)).toEqual({ waiting: 0, running: 1 })
    expect(vllmAdapter.parse('vllm:num_requests_running{model_name="m"} 1\n')).toBeUndefined()
    expect(vllmAdapter.parse(fixture('sglang.txt'))).toBeUndefined()
  })

  it('drops NaN series; all NaN is missing', () => {
    const text =
      'vllm:num_requests_running{engine="0"} NaN\nvllm:num_requests_running{engine="1"} 3\n' +
      'vllm:num_requests_waiting{engine="0"} NaN\nvllm:kv_cache_usage_perc{engine="0"} NaN\n'
    expect(vllmAdapter.parse(text)).toBeUndefined()
    expect(vllmAdapter.parse(`${text}vllm:num_requests_waiting{engine="1"} 2\n`)).toEqual({
      waiting: 2,
      running: 3,
    })
  })

  it('clamps KV usage into 0..1', () => {
    const text =
      'vllm:num_requests_running 0\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 1.0000001\n'
    expect(vllmAdapter.parse(text)?.kvUsage).toBe(1)
  })
})
