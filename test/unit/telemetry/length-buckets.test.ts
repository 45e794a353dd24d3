import { describe, expect, it } from 'vitest'
import { METRICS, outputLengthBucket, promptLengthBucket } from '../../../src/telemetry/index.js'
import { samples, setup, ticket } from './fixtures.js'

describe('length buckets', () => {
  it('prompt: 0-256, 256-1k, 1k-4k, 4k-16k, 16k+ (lower edge inclusive)', () => {
    expect([0, 255, 256, 1023, 1024, 4095, 4096, 16383, 16384, 1e6].map(promptLengthBucket)).toEqual([
      '0-256',
      '0-256',
      '256-1k',
      '256-1k',
      '1k-4k',
      '1k-4k',
      '4k-16k',
      '4k-16k',
      '16k+',
      '16k+',
    ])
  })

  it('output: 0-64, 64-256, 256-1k, 1k-4k, 4k+', () => {
    expect([0, 63, 64, 255, 256, 1023, 1024, 4095, 4096].map(outputLengthBucket)).toEqual([
      '0-64',
      '0-64',
      '64-256',
      '64-256',
      '256-1k',
      '256-1k',
      '1k-4k',
      '1k-4k',
      '4k+',
    ])
  })
})

describe('offered load by prompt length', () => {
  it('counts each offered request by its prompt bucket and verdict, and good tokens per bucket', async () => {
    const { registry, telemetry } = setup()
    // short: good (100 ms TTFT), long: one refused, one that missed TTFT (900 ms)
    telemetry.record(ticket(0, { promptTokens: 100, ttft: 100, e2e: 400, chunks: 8 }))
    telemetry.record(ticket(0, { promptTokens: 6000, outcome: 'rejected', errorCode: 'GW_ERR_TTFT_SLO' }))
    telemetry.record(ticket(0, { promptTokens: 6000, ttft: 900, e2e: 1200, chunks: 8 }))
    // invalid input is not offered load
    telemetry.record(ticket(0, { promptTokens: 100, outcome: 'invalid', errorCode: 'GW_ERR_INVALID_JSON' }))
    const by = async (name: string, keys: string[]) =>
      Object.fromEntries(
        (await samples(registry, name)).map((s) => [keys.map((k) => s.labels[k]).join('/'), s.value]),
      )
    expect(await by(METRICS.requestsByPromptLen, ['class', 'prompt_len', 'verdict'])).toEqual({
      'interactive/0-256/good': 1,
      'interactive/4k-16k/rejected': 1,
      'interactive/4k-16k/missed': 1,
    })
    expect(await by(METRICS.goodTokensByPromptLen, ['class', 'prompt_len'])).toEqual({
      'interactive/0-256': 8,
    })
  })
})
