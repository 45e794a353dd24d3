import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  fmt,
  fmtDelta,
  markdownTable,
  median,
  percentile,
  Report,
  ratio,
  sorted,
  summarize,
} from '../../../src/loadgen/report.js'

describe('percentile', () => {
  it('interpolates linearly between the closest ranks (numpy linear)', () => {
    const s = sorted([4, 1, 3, 2])
    expect(percentile(s, 0)).toBe(1)
    expect(percentile(s, 50)).toBe(2.5)
    expect(percentile(s, 100)).toBe(4)
    expect(percentile(s, 99)).toBeCloseTo(3.97, 10)
    expect(percentile(s, 25)).toBeCloseTo(1.75, 10)
  })

  it('p99 of 1..1000 lies between the 990th and 991st value', () => {
    const s = sorted(Array.from({ length: 1000 }, (_, i) => i + 1))
    expect(percentile(s, 99)).toBeCloseTo(990.01, 10)
    expect(percentile(s, 50)).toBe(500.5)
  })

  it('is NaN with no values, the value itself with one, and refuses p outside 0..100', () => {
    expect(percentile(sorted([]), 50)).toBeNaN()
    expect(percentile(sorted([7]), 99)).toBe(7)
    expect(() => percentile(sorted([1, 2]), 101)).toThrow(RangeError)
    expect(() => percentile(sorted([1, 2]), -1)).toThrow(RangeError)
  })
})

describe('sorted, summarize, median, ratio', () => {
  it('sorts numerically (not as strings) and drops NaN', () => {
    expect([...sorted([10, 9, 100, Number.NaN, 1])]).toEqual([1, 9, 10, 100])
  })

  it('summarizes count, min, mean, percentiles and max', () => {
    const s = summarize([5, 1, 3, 2, 4])
    expect(s).toMatchObject({ count: 5, min: 1, mean: 3, p50: 3, max: 5 })
    expect(s.p90).toBeCloseTo(4.6, 10)
    expect(s.p99).toBeCloseTo(4.96, 10)
    expect(summarize([]).mean).toBeNaN()
  })

  it('takes the middle value, or the mean of the middle two', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([Number.NaN, 5])).toBe(5)
  })

  it('gives NaN for a ratio that cannot be formed', () => {
    expect(ratio(3, 2)).toBe(1.5)
    expect(ratio(3, 0)).toBeNaN()
    expect(ratio(Number.NaN, 2)).toBeNaN()
  })
})

describe('formatting', () => {
  it('prints n/a for NaN and a sign on deltas', () => {
    expect(fmt(1.23456, 2)).toBe('1.23')
    expect(fmt(Number.NaN)).toBe('n/a')
    expect(fmtDelta(0.5, 1)).toBe('+0.5')
    expect(fmtDelta(-0.25, 2)).toBe('-0.25')
    expect(fmtDelta(Number.POSITIVE_INFINITY)).toBe('n/a')
  })

  it('writes a markdown table, numeric columns right-aligned, pipes escaped', () => {
    const t = markdownTable(
      ['name', 'req/s'],
      [
        ['a|b', 12],
        ['c', '3.5'],
      ],
    )
    expect(t.split('\n')).toEqual(['| name | req/s |', '| --- | ---: |', '| a\\|b | 12 |', '| c | 3.5 |'])
  })

  it('right-aligns a column of signed numbers with units even when some cells are empty', () => {
    const t = markdownTable(
      ['target', 'added'],
      [
        ['direct', ''],
        ['gateway', '+0.25 ms'],
        ['nginx', '-0.01'],
      ],
    )
    expect(t.split('\n')[1]).toBe('| --- | ---: |')
  })

  it('builds a report block by block and writes it to a file', () => {
    const r = new Report(false)
    r.heading('Title', 1)
    r.paragraph('text')
    r.table(['x'], [[1]])
    expect(r.toString()).toBe('# Title\n\ntext\n\n| x |\n| ---: |\n| 1 |\n')
    const dir = mkdtempSync(join(tmpdir(), 'report-test-'))
    try {
      r.write(join(dir, 'sub/out.md'))
      expect(readFileSync(join(dir, 'sub/out.md'), 'utf8')).toBe(r.toString())
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
