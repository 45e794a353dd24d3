/** Metric names in a PromQL expression, for the dashboard and rules tests. */

// PromQL words that are not metric names.
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
])

/** Metric names an expression refers to (functions, keywords, labels, strings removed). */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ') // strings
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges and subqueries
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists
    .replace(/\$\{?\w+\}?/g, ' ') // Grafana variables
    .replace(/\b\d+(\.\d+)?([eE][+-]?\d+)?\b/g, ' ') // numbers
  const out: string[] = []
  const re = /[a-zA-Z_:][a-zA-Z0-9_:]*/g
  for (let m = re.exec(stripped); m !== null; m = re.exec(stripped)) {
    const word = m[0]
    const next = stripped.slice(m.index + word.length).trimStart()
    if (next.startsWith('(')) continue // a function or aggregation
    if (KEYWORDS.has(word.toLowerCase())) continue
    out.push(word)
  }
  return out
}
