import { describe, expect, it } from 'vitest'
import { vllmV0Adapter } from '../../../../src/backends/adapters/vllm-v0.js'
import { fixture } from './fixture.js'

describe('vllm-v0 adapter', () => {
  it('reads waiting (with swapped), running, GPU cache usage, capacity and preemptions', () => {
    expect(vllmV0Adapter.parse(fixture('vllm-v0.txt'))).toEqual({
      waiting: 8,
      running: 31,
      kvUsage: 0.9171,
      kvCapacityTokens: 27_000 * 16,
      blockSize: 16,
      prefixCaching: false,
      preemptionsTotal: 14,
    })
    expect(vllmV0Adapter.unsupported).toContain('prefixCache')
  })

  it('sums several model_name series', () => {
    const text =
      'vllm:num_requests_running{model_name="a"} 2\nvllm:num_requests_running{model_name="b"} 3\n' +
      'vllm:num_requests_waiting{model_name="a"} 1\nvllm:num_requests_waiting{model_name="b"} 0\n' +
      'vllm:gpu_cache_usage_perc{model_name="a"} 0.2\nvllm:gpu_cache_usage_perc{model_name="b"} 0.4\n'
    expect(vllmV0Adapter.parse(text)).toEqual({ waiting: 1, running: 5, kvUsage: expect.closeTo(0.3, 10) })
  })

  it('needs waiting and running; swapped is optional; NaN is missing', () => {
    expect(vllmV0Adapter.parse('vllm:num_requests_running 2\nvllm:num_requests_waiting 1\n')).toEqual({
      waiting: 1,
      running: 2,
    })
    expect(vllmV0Adapter.parse('vllm:num_requests_running 2\nvllm:num_requests_swapped 1\n')).toBeUndefined()
    expect(
      vllmV0Adapter.parse('vllm:num_requests_running NaN\nvllm:num_requests_waiting 1\n'),
    ).toBeUndefined()
  })
})
