/**
 * Load-generator maths and output: percentiles, summaries, medians of repeated runs, and a
 * markdown report that is printed and written to a file (used by the project's benchmarks
 * in bench/ and by the load generator users run).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

/** Ascending copy of the values, NaN dropped. */
export function sorted(values: Iterable<number>): Float64Array {
  const out = Float64Array.from([...values].filter((v) => !Number.isNaN(v)))
  return out.sort()
}

/**
 * The p-th percentile (0..100) of ascending values, interpolating linearly between the
 * two closest ranks (numpy's default 'linear' method): rank = p/100 * (n - 1).
 * NaN for no values.
 */
export function percentile(ascending: ArrayLike<number>, p: number): number {
  const n = ascending.length
  if (n === 0) return Number.NaN
  if (p < 0 || p > 100 || Number.isNaN(p)) throw new RangeError(`percentile: p must be in [0, 100], got ${p}`)
  const rank = (p / 100) * (n - 1)
  const lo = Math.floor(rank)
  const hi = Math.min(lo + 1, n - 1)
  const a = ascending[lo]!
  const b = ascending[hi]!
  return a + (b - a) * (rank - lo)
}

export interface Summary {
  readonly count: number
  readonly min: number
  readonly mean: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
}

export function summarize(values: Iterable<number>): Summary {
  const s = sorted(values)
  let sum = 0
  for (const v of s) sum += v
  const n = s.length
  return {
    count: n,
    min: n > 0 ? s[0]! : Number.NaN,
    mean: n > 0 ? sum / n : Number.NaN,
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    max: n > 0 ? s[n - 1]! : Number.NaN,
  }
}

/** Median of repeated measurements (the mean of the middle two for an even count); NaN values dropped. */
export function median(values: Iterable<number>): number {
  return percentile(sorted(values), 50)
}

/** a / b, NaN when either is not a finite number or b is 0. */
export function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : Number.NaN
}

/** A number for a table: fixed digits, `n/a` for NaN or infinity. */
export function fmt(v: number, digits = 2): string {
  return Number.isFinite(v) ? v.toFixed(digits) : 'n/a'
}

/** A signed difference: `+0.31`, `-0.02`. */
export function fmtDelta(v: number, digits = 2): string {
  return Number.isFinite(v) ? (v >= 0 ? '+' : '') + v.toFixed(digits) : 'n/a'
}

/** A markdown table; `|` inside cells is escaped; a column whose cells are all numbers (or empty) is right-aligned. */
export function markdownTable(
  headers: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): string {
  const cell = (v: string | number) => String(v).replaceAll('|', '\\|')
  const numeric = headers.map((_, i) =>
    rows.every((r) => {
      const v = r[i]
      return typeof v === 'number' || v === undefined || /^[-+]?[\d.]+ ?(%|x|ms)?$|^n\/a$|^$/.test(v)
    }),
  )
  const lines = [
    `| ${headers.map(cell).join(' | ')} |`,
    `| ${headers.map((_, i) => (numeric[i] && rows.length > 0 ? '---:' : '---')).join(' | ')} |`,
    ...rows.map((r) => `| ${headers.map((_, i) => cell(r[i] ?? '')).join(' | ')} |`),
  ]
  return lines.join('\n')
}

/** A markdown document built block by block; each block is echoed to stdout as it comes. */
export class Report {
  private readonly blocks: string[] = []
  private readonly echo: boolean

  constructor(echo = true) {
    this.echo = echo
  }

  private add(block: string): void {
    this.blocks.push(block)
    if (this.echo) process.stdout.write(`\n${block}\n`)
  }

  heading(text: string, level = 2): void {
    this.add(`${'#'.repeat(level)} ${text}`)
  }

  paragraph(text: string): void {
    this.add(text)
  }

  table(headers: readonly string[], rows: readonly (readonly (string | number)[])[]): void {
    this.add(markdownTable(headers, rows))
  }

  toString(): string {
    return `${this.blocks.join('\n\n')}\n`
  }

  write(file: string): void {
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, this.toString())
  }
}
