import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parsePromText, parsePromValue } from '../../../src/backends/prom-text.js'

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/metrics/${name}`, import.meta.url), 'utf8')

describe('parsePromValue', () => {
  it('reads the forms Prometheus writes', () => {
    expect(parsePromValue('12.0')).toBe(12)
    expect(parsePromValue('8.128902e+06')).toBe(8_128_902)
    expect(parsePromValue('-1.5E-3')).toBe(-0.0015)
    expect(parsePromValue('.5')).toBe(0.5)
    expect(parsePromValue('NaN')).toBeNaN()
    expect(parsePromValue('nan')).toBeNaN()
    expect(parsePromValue('+Inf')).toBe(Number.POSITIVE_INFINITY)
    expect(parsePromValue('-Inf')).toBe(Number.NEGATIVE_INFINITY)
  })

  it('refuses what is not a number', () => {
    for (const bad of ['', 'abc', '1,5', '0x10', '12ms', '--1', 'Infinity1'])
      expect(parsePromValue(bad)).toBeUndefined()
  })
})

describe('parsePromText', () => {
  it('reads samples, labels and TYPE lines of a real vLLM exposition', () => {
    const t = parsePromText(fixture('vllm-v1.txt'))
    expect(t.invalidLines).toBe(0)
    const running = t.samples.get('vllm:num_requests_running')
    expect(running).toHaveLength(2)
    expect(running?.[0]).toEqual({
      name: 'vllm:num_requests_running',
      labels: { engine: '0', model_name: 'meta-llama/Llama-3.1-8B-Instruct' },
      value: 12,
    })
    expect(t.types.get('vllm:time_to_first_token_seconds')).toBe('histogram')
    expect(t.types.get('vllm:num_preemptions_total')).toBe('counter')
    const inf = t.samples.get('vllm:time_to_first_token_seconds_bucket')?.find((s) => s.labels.le === '+Inf')
    expect(inf?.value).toBe(3437)
    const info = t.samples.get('vllm:cache_config_info')?.[0]
    expect(info?.labels.num_gpu_blocks).toBe('81767')
    expect(info?.labels.num_cpu_blocks).toBe('None')
  })

  it('unescapes label values and accepts a trailing comma, spaces and a timestamp', () => {
    const t = parsePromText(
      'm{a="x\\"y",b="line\\nbreak",c="back\\\\slash",} 1 1712345678000\nm { a = "2" }   3\r\nm 4 # {trace_id="abc"} 1.0\n',
    )
    expect(t.invalidLines).toBe(0)
    expect(t.samples.get('m')?.map((s) => s.value)).toEqual([1, 3, 4])
    expect(t.samples.get('m')?.[0]?.labels).toEqual({ a: 'x"y', b: 'line\nbreak', c: 'back\\slash' })
  })

  it('reads an OpenMetrics quoted metric name', () => {
    const t = parsePromText('{"vllm.dotted.name", model_name="m"} 7\n# EOF\n')
    expect(t.samples.get('vllm.dotted.name')?.[0]).toEqual({
      name: 'vllm.dotted.name',
      labels: { model_name: 'm' },
      value: 7,
    })
  })

  it('keeps NaN and infinities as values', () => {
    const t = parsePromText('a NaN\nb +Inf\nc -Inf\n')
    expect(t.samples.get('a')?.[0]?.value).toBeNaN()
    expect(t.samples.get('b')?.[0]?.value).toBe(Number.POSITIVE_INFINITY)
    expect(t.samples.get('c')?.[0]?.value).toBe(Number.NEGATIVE_INFINITY)
  })

  it('skips bad lines, counts them and keeps the rest', () => {
    const t = parsePromText(
      'good 1\nbad{a="1" 2\n9starts_with_digit 3\nnovalue\ntoo many fields here 1 2\nm{a="unterminated} 1\nalso_good 2\n',
    )
    expect(t.sampleCount).toBe(2)
    expect(t.invalidLines).toBe(5)
    expect(t.samples.get('also_good')?.[0]?.value).toBe(2)
  })

  it('filters by name without counting the others as invalid', () => {
    const t = parsePromText(fixture('vllm-v1.txt'), (n) => n === 'vllm:num_requests_waiting')
    expect([...t.samples.keys()]).toEqual(['vllm:num_requests_waiting'])
    expect(t.skippedLines).toBeGreaterThan(20)
    expect(t.invalidLines).toBe(0)
  })

  it('never throws on garbage', () => {
    const inputs = [
      '',
      '\u0000\u0001\u0002',
      '<html><body>502 Bad Gateway</body></html>',
      '{"object":"error"}',
      '}{',
      '{',
      '"',
    ]
    for (const s of inputs) expect(() => parsePromText(s)).not.toThrow()
    expect(parsePromText('<html>\n</html>').sampleCount).toBe(0)
  })
})
