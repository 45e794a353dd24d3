/**
 * Loading a workload file: YAML, the schema, then the JSONL files of lengths it names (paths
 * relative to the workload file). Every problem is reported at once, in file order, with its
 * path, as the gateway's config errors are: `chat.yaml: classes[0].prompt_tokens.sigma:
 * expected a positive number, got -1`.
 */
import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { parseDocument } from 'yaml'
import type { z } from 'zod'
import { describeIssue, type Path, type Problem } from '../config/format-issues.js'
import { placeProblems } from '../config/locate.js'
import { nearest } from '../config/suggest.js'
import { isRecord } from '../is-record.js'
import { type LengthSpec, lengthSchema, type Workload, workloadSchema } from './workload-schema.js'

export class WorkloadError extends Error {
  readonly problems: readonly string[]
  constructor(problems: readonly string[]) {
    super(`invalid workload:\n  ${problems.join('\n  ')}`)
    this.name = 'WorkloadError'
    this.problems = problems
  }
}

export interface LoadedWorkload {
  readonly workload: Workload
  readonly file: string
  /** The lengths of each `dist: file`, by tableKey(). */
  readonly tables: ReadonlyMap<string, readonly number[]>
}

type FileSpec = Extract<LengthSpec, { dist: 'file' }>

/** Where a `dist: file` table is kept: its resolved path and field. */
export function tableKey(workloadFile: string, spec: Pick<FileSpec, 'path' | 'field'>): string {
  return `${resolve(dirname(workloadFile), spec.path)}#${spec.field ?? ''}`
}

type Def = { type: string } & Record<string, unknown>
const defOf = (schema: unknown): Def => (schema as { _zod: { def: Def } })._zod.def

/** The keys the schema takes at `path` (the union of a discriminated union's options). */
function keysAt(schema: unknown, path: Path): string[] {
  const def = defOf(schema)
  switch (def.type) {
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nullable':
      return keysAt(def.innerType, path)
    case 'pipe': {
      const into = defOf(def.in).type === 'transform' ? def.out : def.in
      return keysAt(into, path)
    }
    case 'union':
      return [...new Set((def.options as unknown[]).flatMap((o) => keysAt(o, path)))]
    case 'array':
      return path.length === 0 ? [] : keysAt(def.element, path.slice(1))
    case 'record':
      return path.length === 0 ? [] : keysAt(def.valueType, path.slice(1))
    case 'object': {
      const shape = def.shape as Record<string, unknown>
      if (path.length === 0) return Object.keys(shape)
      const child = shape[String(path[0])]
      return child === undefined ? [] : keysAt(child, path.slice(1))
    }
    default:
      return []
  }
}

/**
 * Every key path the workload schema takes (`classes[].slo.ttft_ms`); a length's keys once,
 * under `<length>` (`<length>.components[].weight`). docs/workloads.md documents each.
 */
export function workloadKeyPaths(): string[] {
  const out: string[] = []
  const walk = (schema: unknown, prefix: string): void => {
    if (schema === lengthSchema && prefix !== '<length>') return
    const def = defOf(schema)
    switch (def.type) {
      case 'default':
      case 'prefault':
      case 'optional':
      case 'nullable':
        walk(def.innerType, prefix)
        break
      case 'pipe':
        walk(defOf(def.in).type === 'transform' ? def.out : def.in, prefix)
        break
      case 'union':
        for (const o of def.options as unknown[]) walk(o, prefix)
        break
      case 'array':
        walk(def.element, `${prefix}[]`)
        break
      case 'record':
        walk(def.valueType, `${prefix}.<name>`)
        break
      case 'object':
        for (const [key, child] of Object.entries(def.shape as Record<string, unknown>)) {
          const path = prefix === '' ? key : `${prefix}.${key}`
          out.push(path)
          walk(child, path)
        }
        break
    }
  }
  walk(workloadSchema, '')
  walk(lengthSchema, '<length>')
  return [...new Set(out)]
}

const LENGTH_KEYS = new Set(['prompt_tokens', 'output_tokens', 'turns'])
const A_LENGTH =
  'expected a length (a number, or a mapping with dist: fixed, uniform, lognormal, file or mixture)'

function describe(issue: z.core.$ZodIssue): Problem[] {
  if (
    issue.code === 'invalid_type' &&
    issue.expected === 'object' &&
    LENGTH_KEYS.has(String(issue.path.at(-1)))
  )
    return describeIssue(issue).map((p) => ({
      ...p,
      message: p.message.replace('expected a mapping', A_LENGTH),
    }))
  if (issue.code !== 'unrecognized_keys') return describeIssue(issue)
  const known = keysAt(workloadSchema, issue.path)
  return issue.keys.map((key) => {
    const near = nearest(key, known)
    const hint = near === undefined ? ` (it takes: ${known.join(', ')})` : `: did you mean '${near}'?`
    return { path: issue.path, at: [...issue.path, key], message: `unknown key '${key}'${hint}` }
  })
}

/** Each `dist: file` in the parsed workload, with the path of its `path` key. */
function fileSpecs(w: Workload): { spec: FileSpec; at: Path }[] {
  const out: { spec: FileSpec; at: Path }[] = []
  const visit = (spec: LengthSpec, at: Path) => {
    if (spec.dist === 'file') out.push({ spec, at: [...at, 'path'] })
    if (spec.dist === 'mixture')
      spec.components.forEach((c, k) => {
        if (c.dist === 'file') out.push({ spec: c, at: [...at, 'components', k, 'path'] })
      })
  }
  w.classes.forEach((c, i) => {
    visit(c.prompt_tokens, ['classes', i, 'prompt_tokens'])
    visit(c.output_tokens, ['classes', i, 'output_tokens'])
    if (c.conversation !== undefined) visit(c.conversation.turns, ['classes', i, 'conversation', 'turns'])
    if (c.conversation?.think_ms !== undefined)
      visit(c.conversation.think_ms, ['classes', i, 'conversation', 'think_ms'])
  })
  return out
}

/** The lengths of a JSONL file: one number per line, or an object with `field`. Blank lines skipped. */
export function parseLengths(text: string, name: string, field: string | undefined): number[] {
  const out: number[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === '') continue
    let v: unknown
    try {
      v = JSON.parse(line)
    } catch {
      throw new Error(`${name}:${i + 1}: not JSON`)
    }
    if (field !== undefined) {
      if (!isRecord(v)) throw new Error(`${name}:${i + 1}: expected an object with '${field}'`)
      v = v[field]
    }
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
      throw new Error(
        `${name}:${i + 1}: expected a positive integer${field === undefined ? '' : ` in '${field}'`}, got ${JSON.stringify(v) ?? 'nothing'}`,
      )
    out.push(v)
  }
  if (out.length === 0) throw new Error(`${name}: no lengths in it`)
  return out
}

/** Reads and validates `file`; throws a WorkloadError listing every problem. */
export function loadWorkload(file: string): LoadedWorkload {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new WorkloadError([`${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`])
  }
  const doc = parseDocument(text, { prettyErrors: true })
  if (doc.errors.length > 0)
    throw new WorkloadError(doc.errors.map((e) => `${file}: ${e.message.split('\n')[0]}`))
  const raw: unknown = doc.toJS()
  const parsed = workloadSchema.safeParse(raw ?? {}, { reportInput: true })
  if (!parsed.success) {
    const problems = parsed.error.issues.flatMap(describe)
    throw new WorkloadError(placeProblems(problems, file, doc, []))
  }
  const tables = new Map<string, number[]>()
  const problems: Problem[] = []
  for (const { spec, at } of fileSpecs(parsed.data)) {
    const key = tableKey(file, spec)
    if (tables.has(key)) continue
    const path = key.slice(0, key.lastIndexOf('#'))
    try {
      tables.set(key, parseLengths(readFileSync(path, 'utf8'), spec.path, spec.field))
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      const message = code === undefined ? (err as Error).message : `cannot read '${spec.path}' (${code})`
      problems.push({ path: at, at, message })
    }
  }
  if (problems.length > 0) throw new WorkloadError(placeProblems(problems, file, doc, []))
  return { workload: parsed.data, file, tables }
}
