import { describe, expect, it } from 'vitest'
import { trtllmAdapter } from '../../../../src/backends/adapters/trtllm.js'
import { fixture } from './fixture.js'

describe('trtllm adapter', () => {
  it('reads the Prometheus format of /prometheus/metrics', () => {
    expect(trtllmAdapter.parse(fixture('trtllm.txt'))).toEqual({
      waiting: 9,
      running: 64,
      kvUsage: 0.7734375,
      kvCapacityTokens: 5120 * 32,
      blockSize: 32,
      prefixCacheHitsTotal: 1500,
      prefixCacheQueriesTotal: 6000,
    })
    expect(trtllmAdapter.unsupported).toEqual(['preemptionsTotal'])
  })

  it('reads the Dynamo re-export with the trtllm: prefix', () => {
    const text = fixture('trtllm.txt').replaceAll('trtllm_', 'trtllm:')
    expect(trtllmAdapter.parse(text)?.running).toBe(64)
  })

  it('reads the last entry of the JSON iteration stats of /metrics', () => {
    expect(trtllmAdapter.parse(fixture('trtllm-iteration-stats.json'))).toEqual({
      waiting: 3,
      running: 44,
      kvUsage: 2992 / 5120,
      kvCapacityTokens: 5120 * 32,
    })
  })

  it('an empty iteration list is an idle engine; a JSON object without counts is unreadable', () => {
    expect(trtllmAdapter.parse('[]')).toEqual({ waiting: 0, running: 0 })
    expect(trtllmAdapter.parse('[{"iter": 3}]')).toBeUndefined()
    expect(trtllmAdapter.parse('[1, 2]')).toBeUndefined()
    expect(trtllmAdapter.parse('{"error": "not found"}')).toBeUndefined()
  })

  it('sums several model_name series; NaN is missing', () => {
    const text =
      'trtllm_num_requests_running{model_name="a"} 1\ntrtllm_num_requests_running{model_name="b"} 2\n' +
      'trtllm_num_requests_waiting{model_name="a"} NaN\ntrtllm_num_requests_waiting{model_name="b"} 4\n'
    expect(trtllmAdapter.parse(text)).toEqual({ waiting: 4, running: 3 })
    expect(
      trtllmAdapter.parse('trtllm_num_requests_running 1\ntrtllm_num_requests_waiting NaN\n'),
    ).toBeUndefined()
  })
})
