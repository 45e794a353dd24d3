import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { sameFamily, sniffEngine } from '../../../../src/backends/adapters/sniff.js'

const metrics = (name: string) =>
  readFileSync(join(import.meta.dirname, '../../../fixtures/metrics', name), 'utf8')

describe('sniffEngine', () => {
  it.each([
    ['vllm-v1.txt', 'vllm'],
    ['vllm-v0.txt', 'vllm'],
    ['sglang.txt', 'sglang'],
    ['tgi.txt', 'tgi'],
    ['llamacpp.txt', 'llamacpp'],
    ['trtllm.txt', 'trtllm'],
    ['trtllm-iteration-stats.json', 'trtllm'],
  ])('%s looks like %s', (file, engine) => {
    expect(sniffEngine(metrics(file))).toBe(engine)
  })

  it('says nothing of text with none of the engines’ metrics', () => {
    expect(
      sniffEngine('# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1\n'),
    ).toBeUndefined()
    expect(sniffEngine('<html>502 Bad Gateway</html>')).toBeUndefined()
  })

  it('treats vllm and vllm-v0 as one family (no hint between them)', () => {
    expect(sameFamily('vllm', 'vllm-v0')).toBe(true)
    expect(sameFamily('vllm', 'sglang')).toBe(false)
  })
})
