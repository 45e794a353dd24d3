/**
 * Where a problem's value came from, and the order problems are reported in: the file's
 * problems in the order their keys appear in it, then those of values given on the command
 * line or in the environment, named as given (`--set classes.interactive.slo.ttft_ms=abc`,
 * `--upstream localhost`, `SLO_GATEWAY_PORT=eighty`), never as a line of a file the user
 * did not write.
 */
import { type Document, isNode } from 'yaml'
import { formatPath, type Path, type Problem } from './format-issues.js'

/** A value set outside the file, at `at`, by `source`. Later ones win. */
export interface Override {
  readonly at: Path
  readonly source: string
}

function isPrefix(prefix: Path, path: Path): boolean {
  return prefix.length <= path.length && prefix.every((seg, i) => seg === path[i])
}

function nodeAt(doc: Document | undefined, path: Path): { range?: unknown } | undefined {
  if (doc === undefined) return undefined
  const node = path.length === 0 ? doc.contents : doc.getIn(path as unknown[], true)
  return isNode(node) ? node : undefined
}

/** The offset in the file of the deepest part of `path` it writes. */
function offsetOf(doc: Document | undefined, path: Path): number {
  for (let n = path.length; n >= 0; n--) {
    const node = nodeAt(doc, path.slice(0, n))
    const range = node?.range
    if (Array.isArray(range) && typeof range[0] === 'number') return range[0]
  }
  return Number.MAX_SAFE_INTEGER
}

/** Index of the override that set the value at `at`, if one did. */
function overrideOf(doc: Document | undefined, overrides: readonly Override[], at: Path): number | undefined {
  for (let k = overrides.length - 1; k >= 0; k--) {
    const o = overrides[k]!
    if (isPrefix(o.at, at)) return k
    // a problem above the value an override set (a class it created): the override's, unless the file has it
    if (isPrefix(at, o.at) && nodeAt(doc, at) === undefined) return k
  }
  return undefined
}

/** `SOURCE: path: message` lines, in file order, then flags and environment in their order. */
export function placeProblems(
  problems: readonly Problem[],
  file: string,
  doc: Document | undefined,
  overrides: readonly Override[],
  kind = '',
): string[] {
  return problems
    .map((p, i) => {
      const k = overrideOf(doc, overrides, p.at)
      const source = k === undefined ? file : overrides[k]!.source
      const order = k === undefined ? [0, offsetOf(doc, p.at), i] : [1, k, i]
      return { line: `${source}: ${formatPath(p.path)}: ${kind}${p.message}`, order }
    })
    .sort((a, b) => a.order[0]! - b.order[0]! || a.order[1]! - b.order[1]! || a.order[2]! - b.order[2]!)
    .map((x) => x.line)
}
