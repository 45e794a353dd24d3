import { describe, expect, it } from 'vitest'
import { outputLengthBucket, promptLengthBucket } from '../../../src/telemetry/index.js'

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
