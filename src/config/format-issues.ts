/**
 * Turns schema issues into messages an operator can act on:
 * `backends.pools[0].endpoints[1]: expected an http(s) URL, got 'localhost'`. A message
 * names the rule (the schema's own wording where it has one), not the validator,
 * suggests the nearest key or value for a misspelling, and names what replaced a retired
 * key.
 */
import type { z } from 'zod'
import { isRecord } from '../is-record.js'
import { configKeyPaths } from './key-paths.js'
import { retiredKey } from './retired-keys.js'
import { nearest } from './suggest.js'

export type Path = readonly PropertyKey[]

/** One problem: the path shown, where its value is (for its source and file order), the message. */
export interface Problem {
  readonly path: Path
  readonly at: Path
  readonly message: string
}

export function formatPath(path: Path): string {
  let out = ''
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`
    else out += out === '' ? String(seg) : `.${String(seg)}`
  }
  return out === '' ? '(root)' : out
}

export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing'
  if (v === null) return 'null'
  if (typeof v === 'string') return `'${v.length > 60 ? `${v.slice(0, 57)}...` : v}'`
  if (Array.isArray(v)) return 'a list'
  if (typeof v === 'object') return 'a mapping'
  return String(v)
}

const TYPE_NAMES: Record<string, string> = {
  int: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
}

let keyPaths: readonly string[] | undefined

/** The keys the schema accepts under `path` (list indexes and class names generalised). */
export function keysUnder(path: Path): string[] {
  keyPaths ??= configKeyPaths()
  const paths = keyPaths
  let prefix = ''
  path.forEach((seg, i) => {
    if (typeof seg === 'number') prefix += '[]'
    else if (i === 1 && path[0] === 'classes') prefix += '.<name>'
    else if (i > 0 && paths.some((p) => p.startsWith(`${prefix}.<class>.`))) prefix += '.<class>'
    else prefix += prefix === '' ? String(seg) : `.${String(seg)}`
  })
  const start = prefix === '' ? '' : `${prefix}.`
  const out: string[] = []
  for (const p of keyPaths) {
    if (!p.startsWith(start)) continue
    const rest = p.slice(start.length)
    if (/^[a-z0-9_]+$/.test(rest)) out.push(rest)
  }
  return out
}

function didYouMean(typed: unknown, known: readonly string[]): string {
  if (typeof typed !== 'string') return ''
  const near = nearest(typed, known)
  return near === undefined ? '' : `: did you mean '${near}'?`
}

/** The schema's own message when it has one (zod's defaults start with "Invalid"). */
function ownMessage(issue: z.core.$ZodIssue): string | undefined {
  return issue.message.startsWith('Invalid') ? undefined : issue.message
}

function expectation(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${TYPE_NAMES[issue.expected] ?? issue.expected}`
    case 'too_small': {
      if (issue.origin === 'array') return `expected at least ${issue.minimum} item(s)`
      if (issue.origin === 'string')
        return Number(issue.minimum) > 1
          ? `expected at least ${issue.minimum} characters`
          : 'expected a non-empty string'
      const min = Number(issue.minimum)
      if (min === 0 && issue.inclusive === false) return 'expected a positive number'
      return `expected a number >= ${issue.minimum}`
    }
    case 'too_big':
      return `expected at most ${issue.maximum}`
    case 'invalid_format':
      if (issue.format === 'url') return 'expected an http(s) URL'
      return ownMessage(issue) ?? `expected text of the form ${issue.pattern ?? issue.format}`
    case 'invalid_value':
      return `expected one of ${issue.values.map((x) => JSON.stringify(x)).join(', ')}`
    case 'invalid_union':
      if ('options' in issue && Array.isArray(issue.options)) {
        return `expected one of ${issue.options.map((x: unknown) => JSON.stringify(x)).join(', ')}`
      }
      return issue.message
    default:
      return issue.message
  }
}

function suggestion(issue: z.core.$ZodIssue, input: unknown): string {
  if (issue.code === 'invalid_value') return didYouMean(input, issue.values.map(String))
  if (issue.code === 'invalid_union' && 'options' in issue && Array.isArray(issue.options))
    return didYouMean(input, issue.options.map(String))
  return ''
}

/** What one issue says, as problems (an unknown-keys issue gives one per key). */
export function describeIssue(issue: z.core.$ZodIssue): Problem[] {
  const path = issue.path
  if (issue.code === 'unrecognized_keys') {
    const known = keysUnder(path)
    return issue.keys.map((key) => {
      const retired = retiredKey(path, key)
      if (retired !== undefined) return { path, at: [...path, key], message: `'${key}' was ${retired}` }
      const near = didYouMean(key, known)
      const hint = near !== '' ? near : ` (${formatPath(path)} takes: ${known.join(', ')})`
      return { path, at: [...path, key], message: `unknown key '${key}'${hint}` }
    })
  }
  const base = expectation(issue)
  if (issue.code === 'custom' || !('input' in issue)) return [{ path, at: path, message: base }]
  let input: unknown = issue.input
  // a discriminated union reports the whole mapping; show the discriminator's value
  if (issue.code === 'invalid_union' && 'discriminator' in issue && isRecord(input)) {
    input = input[String(issue.discriminator)]
  }
  if (input === undefined) return [{ path, at: path, message: `missing, ${base}` }]
  // what is wrong under api_keys may be a plain key, and an admin token is a secret: never echo them
  if (path.includes('api_keys') || path.includes('admin_token'))
    return [{ path, at: path, message: `${base}, got a value of ${String(input).length} characters` }]
  return [{ path, at: path, message: `${base}, got ${describeValue(input)}${suggestion(issue, input)}` }]
}

/** One line per problem, each naming its source (file or flag) and the path. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], source: string): string[] {
  return issues.flatMap(describeIssue).map((p) => `${source}: ${formatPath(p.path)}: ${p.message}`)
}
