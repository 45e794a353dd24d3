/** bench:peers:overhead's acceptance table: within-round ratios and differences, and the verdicts. */
import { describe, expect, it } from 'vitest'
import { Report } from '../../src/loadgen/report.js'
import { writeAcceptance } from '../peers-acceptance.js'
import type { SizeStats } from '../peers-measure.js'
import type { PeersResults } from '../peers-overhead-report.js'

function stats(o: Partial<SizeStats> & { cpuAt?: [number, number]; p99At?: [number, number] }): SizeStats {
  const [cpu200, cpu1000] = o.cpuAt ?? [100, 100]
  const [p99200, p991000] = o.p99At ?? [2, 2]
  return {
    satRps: 1000,
    satP50: 1,
    satP99: 2,
    cpuUsPerReq: 100,
    streamsPerS: 100,
    cpuUsPerStream: 200,
    ttfcP50: 1,
    ttfcP99: 2,
    chunkP50: 0.2,
    chunkP99: 0.4,
    failed: 0,
    ...o,
    fixed: [
      { rate: 200, p50: o.satP50 ?? 1, p99: p99200, cpuUs: cpu200, failed: 0 },
      { rate: 1000, p50: o.satP50 ?? 1, p99: p991000, cpuUs: cpu1000, failed: 0 },
    ],
  }
}

function table(res: PeersResults): string[] {
  const r = new Report(false)
  writeAcceptance(r, res, [200, 1000])
  return r
    .toString()
    .split('\n')
    .filter((l) => /^\| \d[ab]?\. /.test(l))
}

describe('bench:peers:overhead acceptance', () => {
  it('computes each target within a round and gives hit or MISSED against the goal', () => {
    const res: PeersResults = new Map([
      [
        1024,
        new Map([
          ['direct', { label: 'd', rounds: [stats({ ttfcP50: 0.5, p99At: [1, 1] })] }],
          ['nginx', { label: 'n', rounds: [stats({ satRps: 4000, cpuAt: [50, 30], chunkP50: 0.25 })] }],
          [
            'gateway-all',
            {
              label: 'g',
              rounds: [
                stats({ satRps: 1000, cpuAt: [400, 150], ttfcP50: 0.7, chunkP50: 0.3, p99At: [3, 1.5] }),
              ],
            },
          ],
        ]),
      ],
      [
        204800,
        new Map([
          ['direct', { label: 'd', rounds: [stats({ satP50: 1 })] }],
          ['gateway-all', { label: 'g', rounds: [stats({ cpuUsPerReq: 300, satP50: 1.5 })] }],
        ]),
      ],
    ])
    const rows = table(res)
    const row = (n: string) => rows.find((l) => l.startsWith(`| ${n}. `)) ?? ''
    expect(row('1a')).toMatch(/\| 5\.00 x \| MISSED \|$/) // 150 / 30 at the top rate
    expect(row('1b')).toMatch(/\| 0\.25 x \| MISSED \|$/)
    expect(row('2a')).toMatch(/\| \+0\.20 ms \| hit \|$/)
    expect(row('2b')).toMatch(/\| \+0\.05 ms \| hit \|$/)
    expect(row('3a')).toMatch(/\| 3\.00 x \| MISSED \|$/) // 300 / 100 µs
    expect(row('4')).toMatch(/\| \+0\.50 ms \| hit \|$/)
  })

  it('judges the Node floor by the same goals, in a column of its own beside the gateway', () => {
    const res: PeersResults = new Map([
      [
        1024,
        new Map([
          ['direct', { label: 'd', rounds: [stats({ ttfcP50: 0.5 })] }],
          ['nginx', { label: 'n', rounds: [stats({ satRps: 4000, cpuAt: [50, 30] })] }],
          ['node-floor', { label: 'f', rounds: [stats({ satRps: 3000, cpuAt: [100, 90], ttfcP50: 1.0 })] }],
          ['gateway-all', { label: 'g', rounds: [stats({ satRps: 1000, cpuAt: [400, 150] })] }],
        ]),
      ],
    ])
    const r = new Report(false)
    writeAcceptance(r, res, [200, 1000])
    const text = r.toString()
    expect(text).toContain('| target | goal | slo-gateway | verdict | Node floor | verdict |')
    const row1a = text.split('\n').find((l) => l.startsWith('| 1a. ')) ?? ''
    expect(row1a).toMatch(/\| 5\.00 x \| MISSED \| 3\.00 x \| hit \|$/) // 150 / 30 and 90 / 30
    const row2a = text.split('\n').find((l) => l.startsWith('| 2a. ')) ?? ''
    expect(row2a).toMatch(/\| \+0\.50 ms \| MISSED \|$/) // the floor's 1.0 - 0.5: no Node proxy meets it here
  })
})
