/** bench:peers:overhead's pure parts: the padded request bodies and the headline ratio. */
import { describe, expect, it } from 'vitest'
import { chatBody, type SizeStats } from '../peers-measure.js'
import { headlines, type PeersResults } from '../peers-overhead-report.js'

const stats = (satRps: number, streamsPerS: number): SizeStats => ({
  satRps,
  satP50: 1,
  satP99: 2,
  cpuUsPerReq: 10,
  fixed: [],
  streamsPerS,
  cpuUsPerStream: 20,
  ttfcP50: 1,
  ttfcP99: 2,
  chunkP50: 0.1,
  chunkP99: 0.2,
  failed: 0,
})

describe('bench:peers:overhead', () => {
  it('pads a chat request to the body size asked, valid JSON, streamed or not', () => {
    for (const bytes of [1024, 16 * 1024, 200 * 1024])
      for (const stream of [false, true]) {
        const body = chatBody(bytes, stream, 10)
        expect(body.length).toBe(bytes)
        const parsed = JSON.parse(body) as { stream?: boolean; max_tokens: number }
        expect(parsed.stream === true).toBe(stream)
        expect(parsed.max_tokens).toBe(stream ? 10 : 1)
      }
  })

  it('the headline is the median over rounds of the within-round ratio, met at 5x', () => {
    const res: PeersResults = new Map([
      [
        1024,
        new Map([
          ['gateway-all', { label: 'gw', rounds: [stats(600, 300), stats(500, 100), stats(900, 200)] }],
          ['portkey', { label: 'pk', rounds: [stats(100, 100), stats(100, 100), stats(100, 100)] }],
        ]),
      ],
    ])
    expect(headlines(res)).toEqual([
      { size: 1024, streamed: false, ratio: 6, met: true },
      { size: 1024, streamed: true, ratio: 2, met: false },
    ])
  })
})
