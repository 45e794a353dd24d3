import { describe, expect, it } from 'vitest'
import { buckets125, geometricBuckets, Histogram } from '../../../src/sim/histogram.js'
import { formatNumber, PromWriter } from '../../../src/sim/metric-formats/prom-text.js'

describe('Prometheus text', () => {
  it('formats numbers as prometheus_client (python) and Rust/C++ exporters (plain) do', () => {
    expect(formatNumber(3, 'python')).toBe('3.0')
    expect(formatNumber(0.25, 'python')).toBe('0.25')
    expect(formatNumber(3, 'plain')).toBe('3')
    expect(formatNumber(Number.POSITIVE_INFINITY, 'plain')).toBe('+Inf')
  })

  it('renders cumulative histogram buckets with +Inf, _count and _sum', () => {
    const h = new Histogram([0.1, 1])
    for (const v of [0.05, 0.5, 0.5, 5]) h.observe(v)
    const text = new PromWriter('python').histogram('x_seconds', 'X.', 'a="b"', h).text()
    expect(text).toBe(
      [
        '# HELP x_seconds X.',
        '# TYPE x_seconds histogram',
        'x_seconds_bucket{a="b",le="0.1"} 1.0',
        'x_seconds_bucket{a="b",le="1.0"} 3.0',
        'x_seconds_bucket{a="b",le="+Inf"} 4.0',
        'x_seconds_count{a="b"} 4.0',
        'x_seconds_sum{a="b"} 6.05',
        '',
      ].join('\n'),
    )
  })

  it("builds vLLM's 1-2-5 and TGI's geometric bucket lists", () => {
    expect(buckets125(100)).toEqual([1, 2, 5, 10, 20, 50, 100])
    const g = geometricBuckets(0.0001, 1.5, 35)
    expect(g).toHaveLength(35)
    expect(g[0]).toBeCloseTo(0.00015, 12)
  })

  it('puts an observation equal to a bound in that bucket', () => {
    const h = new Histogram([1, 2])
    h.observe(1)
    h.observe(2)
    expect(h.cumulative()).toEqual([1, 2, 2])
  })
})
