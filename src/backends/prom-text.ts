/**
 * A small, tolerant parser of the Prometheus text exposition format (0.0.4), which also
 * reads what OpenMetrics 1.0 adds on sample lines (`# EOF`, exemplars after ` # `).
 *
 * Contract: never throws. A line it cannot read is skipped and counted in `invalidLines`,
 * so one bad line does not hide the rest of a model server's /metrics. Values keep their
 * special forms: `NaN`, `+Inf`, `-Inf` parse to NaN, Infinity, -Infinity (deciding what
 * a NaN gauge means is the adapter's job). Timestamps are read and dropped.
 *
 * Why not a package: the one npm parser found (parse-prometheus-text-format 1.1.1) ships no
 * types and builds untyped family objects; this is ~180 lines, typed, filterable by name
 * (most of a vLLM /metrics is histogram buckets nobody here needs) and tested against every
 * engine's real text (test/fixtures/metrics).
 */

export interface PromSample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface PromText {
  /** Samples by metric name (histogram/summary parts keep their `_bucket`/`_sum`/`_count` names). */
  readonly samples: ReadonlyMap<string, readonly PromSample[]>
  /** `# TYPE` declarations by metric family name. */
  readonly types: ReadonlyMap<string, string>
  /** Samples kept. */
  readonly sampleCount: number
  /** Sample lines skipped because `wanted` refused their name (they looked valid). */
  readonly skippedLines: number
  readonly invalidLines: number
}

const NAME_START = /[a-zA-Z_:]/
const NAME_CHAR = /[a-zA-Z0-9_:]/
const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({})

/** Reads a number as Prometheus writes it (Go ParseFloat rules: `NaN`, `+Inf`, `1e+06`). */
export function parsePromValue(text: string): number | undefined {
  switch (text.toLowerCase()) {
    case 'nan':
      return Number.NaN
    case '+inf':
    case 'inf':
      return Number.POSITIVE_INFINITY
    case '-inf':
      return Number.NEGATIVE_INFINITY
  }
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) {
    // Go also accepts hex and underscores; no engine writes them.
    return undefined
  }
  return Number(text)
}

interface Cursor {
  s: string
  i: number
}

function readName(c: Cursor): string | undefined {
  const start = c.i
  if (c.i >= c.s.length || !NAME_START.test(c.s[c.i]!)) return undefined
  c.i++
  while (c.i < c.s.length && NAME_CHAR.test(c.s[c.i]!)) c.i++
  return c.s.slice(start, c.i)
}

function readQuoted(c: Cursor): string | undefined {
  if (c.s[c.i] !== '"') return undefined
  c.i++
  let out = ''
  while (c.i < c.s.length) {
    const ch = c.s[c.i]!
    if (ch === '"') {
      c.i++
      return out
    }
    if (ch === '\\') {
      const next = c.s[c.i + 1]
      if (next === 'n') out += '\n'
      else if (next === '\\' || next === '"') out += next
      else if (next === undefined) return undefined
      else out += `\\${next}`
      c.i += 2
      continue
    }
    out += ch
    c.i++
  }
  return undefined
}

function skipSpaces(c: Cursor): void {
  while (c.s[c.i] === ' ' || c.s[c.i] === '\t') c.i++
}

/** Reads `{a="1",b="2"}` (trailing comma allowed); the name may come quoted inside (OpenMetrics 2). */
function readLabels(c: Cursor): { labels: Record<string, string>; quotedName?: string } | undefined {
  const labels: Record<string, string> = {}
  let quotedName: string | undefined
  c.i++ // '{'
  for (;;) {
    skipSpaces(c)
    if (c.s[c.i] === '}') {
      c.i++
      return quotedName === undefined ? { labels } : { labels, quotedName }
    }
    let key: string | undefined
    if (c.s[c.i] === '"') {
      const q = readQuoted(c)
      if (q === undefined) return undefined
      skipSpaces(c)
      if (c.s[c.i] !== '=') {
        if (quotedName !== undefined) return undefined
        quotedName = q
        key = undefined
      } else key = q
    } else {
      key = readName(c)
      if (key === undefined) return undefined
    }
    if (key !== undefined) {
      skipSpaces(c)
      if (c.s[c.i] !== '=') return undefined
      c.i++
      skipSpaces(c)
      const value = readQuoted(c)
      if (value === undefined) return undefined
      labels[key] = value
    }
    skipSpaces(c)
    if (c.s[c.i] === ',') c.i++
    else if (c.s[c.i] !== '}') return undefined
  }
}

function parseSampleLine(
  line: string,
  wanted: ((name: string) => boolean) | undefined,
): PromSample | null | undefined {
  const c: Cursor = { s: line, i: 0 }
  let name: string | undefined
  let labels: Readonly<Record<string, string>> = NO_LABELS
  if (line[0] === '{') {
    const r = readLabels(c)
    if (r?.quotedName === undefined) return undefined
    name = r.quotedName
    labels = r.labels
    if (wanted !== undefined && !wanted(name)) return null
  } else {
    name = readName(c)
    if (name === undefined) return undefined
    // Cheap skip before reading labels: most of a vLLM /metrics is histogram buckets nobody asked for.
    if (wanted !== undefined && !wanted(name)) return null
    skipSpaces(c)
    if (c.s[c.i] === '{') {
      const r = readLabels(c)
      if (r === undefined || r.quotedName !== undefined) return undefined
      labels = r.labels
    }
  }
  skipSpaces(c)
  const rest = line.slice(c.i)
  const hash = rest.indexOf(' #') // OpenMetrics exemplar
  const fields = (hash >= 0 ? rest.slice(0, hash) : rest).trim().split(/[ \t]+/)
  if (fields.length < 1 || fields.length > 2 || fields[0] === '') return undefined
  const value = parsePromValue(fields[0]!)
  if (value === undefined) return undefined
  if (fields.length === 2 && parsePromValue(fields[1]!) === undefined) return undefined
  return { name, labels, value }
}

/**
 * Parses exposition text. `wanted`, when given, keeps only the samples whose metric name
 * it accepts (the others are skipped cheaply, and are not counted as invalid).
 */
export function parsePromText(text: string, wanted?: (name: string) => boolean): PromText {
  const samples = new Map<string, PromSample[]>()
  const types = new Map<string, string>()
  let sampleCount = 0
  let skippedLines = 0
  let invalidLines = 0
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1).trim() : raw.trim()
    if (line === '') continue
    if (line[0] === '#') {
      const m = /^#\s+TYPE\s+(\S+)\s+(\S+)/.exec(line)
      if (m !== null) types.set(m[1]!, m[2]!.toLowerCase())
      continue
    }
    const sample = parseSampleLine(line, wanted)
    if (sample === null) {
      skippedLines++
      continue
    }
    if (sample === undefined) {
      invalidLines++
      continue
    }
    sampleCount++
    const list = samples.get(sample.name)
    if (list === undefined) samples.set(sample.name, [sample])
    else list.push(sample)
  }
  return { samples, types, sampleCount, skippedLines, invalidLines }
}
