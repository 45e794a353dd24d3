/**
 * Turns schema issues into messages an operator can act on:
 * `backends.pools[0].endpoints[1]: expected a URL, got 'localhost'`.
 */
import type { z } from 'zod'
import { isRecord } from '../is-record.js'

export function formatPath(path: readonly PropertyKey[]): string {
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

function expectation(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${TYPE_NAMES[issue.expected] ?? issue.expected}`
    case 'too_small': {
      if (issue.origin === 'array') return `expected at least ${issue.minimum} item(s)`
      if (issue.origin === 'string') return 'expected a non-empty string'
      const min = Number(issue.minimum)
      if (min === 0 && issue.inclusive === false) return 'expected a positive number'
      return `expected a number >= ${issue.minimum}`
    }
    case 'too_big':
      return `expected at most ${issue.maximum}`
    case 'invalid_format':
      return issue.format === 'url' ? 'expected an http(s) URL' : `expected ${issue.format} format`
    case 'invalid_value':
      return `expected one of ${issue.values.map((x) => JSON.stringify(x)).join(', ')}`
    case 'unrecognized_keys':
      return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')} (check the spelling; see docs/config.md)`
    case 'invalid_union':
      if ('options' in issue && Array.isArray(issue.options)) {
        return `expected one of ${issue.options.map((x: unknown) => JSON.stringify(x)).join(', ')}`
      }
      return issue.message
    default:
      return issue.message
  }
}

/** One line per problem, each naming its source (file or flag) and the path. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], source: string): string[] {
  return issues.map((issue) => {
    const base = `${source}: ${formatPath(issue.path)}: ${expectation(issue)}`
    if (issue.code === 'unrecognized_keys' || issue.code === 'custom' || !('input' in issue)) return base
    let input: unknown = issue.input
    // a discriminated union reports the whole mapping; show the discriminator's value
    if (issue.code === 'invalid_union' && 'discriminator' in issue && isRecord(input)) {
      input = input[String(issue.discriminator)]
    }
    if (input === undefined) return `${source}: ${formatPath(issue.path)}: missing, ${expectation(issue)}`
    return `${base}, got ${describeValue(input)}`
  })
}
