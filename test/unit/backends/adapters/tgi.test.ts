import { describe, expect, it } from 'vitest'
import { tgiAdapter } from '../../../../src/backends/adapters/tgi.js'
import { fixture } from './fixture.js'

describe('tgi adapter', () => {
  it('reads queue size and batch size; says it has no KV gauge', () => {
    expect(tgiAdapter.parse(fixture('tgi.txt'))).toEqual({ waiting: 17, running: 32 })
    expect(tgiAdapter.unsupported).toEqual(['kvUsage', 'kvCapacityTokens', 'preemptionsTotal', 'prefixCache'])
  })

  it('an idle TGI that has not set its gauges yet is 0 and 0', () => {
    expect(tgiAdapter.parse(fixture('tgi-idle.txt'))).toEqual({ waiting: 0, running: 0 })
  })

  it('sums several series; NaN is missing', () => {
    const text = 'tgi_queue_size{model="a"} 1\ntgi_queue_size{model="b"} 2\ntgi_batch_current_size NaN\n'
    expect(tgiAdapter.parse(text)).toEqual({ waiting: 3, running: 0 })
  })
})
