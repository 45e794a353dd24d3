/**
 * deploy/docker/Dockerfile without a Docker engine: the `dockerfile-utils` linter (the
 * diagnostics of the VS Code Docker extension's language server; hadolint is not on npm)
 * finds nothing, and the conventions hold: multi-stage on Node 24, production dependencies
 * only, a numeric non-root USER, `slo-gateway serve` as the exec-form entrypoint, and every
 * file a COPY takes from the context present and let through by .dockerignore.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { validate } from 'dockerfile-utils'
import { describe, expect, it } from 'vitest'
import { ROOT } from './render.js'

const TEXT = readFileSync(join(ROOT, 'deploy', 'docker', 'Dockerfile'), 'utf8')
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> }

interface Instruction {
  readonly keyword: string
  readonly args: string
}

/** Instructions in order, continuation lines joined, comments dropped. */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = []
  let pending = ''
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (pending === '' && (line === '' || line.startsWith('#'))) continue
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `
      continue
    }
    const full = pending + line
    pending = ''
    const m = /^(\S+)\s*(.*)$/.exec(full)
    if (m !== null) out.push({ keyword: m[1]!.toUpperCase(), args: m[2]! })
  }
  return out
}

const ALL = instructions(TEXT)
const stages: Instruction[][] = []
for (const i of ALL) {
  if (i.keyword === 'FROM') stages.push([])
  stages.at(-1)?.push(i)
}
const final = stages.at(-1) ?? []
const args = new Map(
  ALL.filter((i) => i.keyword === 'ARG').map((i) => {
    const [k, v] = i.args.split('=')
    return [k!, v ?? ''] as const
  }),
)
const resolve = (s: string) =>
  s.replace(/\$\{(\w+)\}|\$(\w+)/g, (_m, a?: string, b?: string) => args.get(a ?? b!) ?? '')

/** .dockerignore's verdict on a context path: the last pattern that matches wins. */
function ignored(path: string): boolean {
  const lines = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
  const parts = path.split('/')
  const prefixes = parts.map((_p, i) => parts.slice(0, i + 1).join('/'))
  let out = false
  for (const line of lines) {
    const negated = line.startsWith('!')
    const pattern = (negated ? line.slice(1) : line).replace(/^\/|\/$/g, '')
    const source = pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*\*|\*|\?/g, (t) => (t === '**' ? '.*' : t === '*' ? '[^/]*' : '[^/]'))
    const re = new RegExp(`^${source}$`)
    if (prefixes.some((p) => re.test(p))) out = !negated
  }
  return out
}

/** A file under `path` (or `path` itself), to ask .dockerignore about. */
function sampleFile(path: string): string {
  if (!statSync(join(ROOT, path)).isDirectory()) return path
  const first = readdirSync(join(ROOT, path)).sort()[0]
  return first === undefined ? path : sampleFile(`${path}/${first}`)
}

describe('deploy/docker/Dockerfile', () => {
  it('passes the dockerfile-utils linter', () => {
    expect(validate(TEXT).map((d) => `line ${d.range.start.line + 1}: ${d.message}`)).toEqual([])
  })

  it('builds in stages on Node 24, with production dependencies only in the image', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2)
    for (const s of stages) {
      const image = resolve(s[0]!.args.split(/\s+/)[0]!)
      expect(image).toMatch(/^node:24(-[a-z]+)*(-slim)?$|^node:24\.\d+/)
    }
    const copies = final.filter((i) => i.keyword === 'COPY').map((i) => i.args)
    const modulesFrom = /--from=(\S+)\s+\S*node_modules/.exec(copies.join('\n'))?.[1]
    expect(modulesFrom, 'node_modules copied from a stage').toBeDefined()
    const deps = stages.find((s) => s[0]!.args.includes(` AS ${modulesFrom}`))!
    expect(deps.some((i) => i.keyword === 'RUN' && /npm ci\b.*--omit=dev/.test(i.args))).toBe(true)
    expect(
      ALL.some((i) => i.keyword === 'ADD'),
      'COPY, not ADD',
    ).toBe(false)
  })

  it('runs as a numeric non-root user', () => {
    const user = final.filter((i) => i.keyword === 'USER').at(-1)?.args
    expect(user).toMatch(/^\d+(:\d+)?$/)
    expect(Number(user!.split(':')[0])).toBeGreaterThan(0)
  })

  it('starts `slo-gateway serve` (the package bin) in exec form', () => {
    const entry = JSON.parse(final.find((i) => i.keyword === 'ENTRYPOINT')!.args) as string[]
    const cmd = JSON.parse(final.find((i) => i.keyword === 'CMD')!.args) as string[]
    const workdir = final.find((i) => i.keyword === 'WORKDIR')!.args
    expect(entry[0]).toBe('node')
    expect(entry[1]).toBe(`${workdir}/${PKG.bin['slo-gateway']}`)
    expect(cmd).toEqual(['serve'])
  })

  it('copies what the CLI reads at run time: package.json (its version) and config/', () => {
    const copied = final
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
      .map((i) => i.args)
    expect(copied).toContain('package.json ./')
    expect(copied).toContain('config config')
  })

  it('takes from the context only files that exist and that .dockerignore lets through', () => {
    const sources = ALL.filter((i) => i.keyword === 'COPY' && !i.args.includes('--from=')).flatMap((i) =>
      i.args.split(/\s+/).slice(0, -1),
    )
    expect(sources.length).toBeGreaterThan(3)
    for (const s of sources) {
      expect(existsSync(join(ROOT, s)), `${s} is not in the repository`).toBe(true)
      expect(ignored(sampleFile(s)), `${sampleFile(s)} is excluded by .dockerignore`).toBe(false)
    }
    expect(ignored('node_modules/fastify/package.json')).toBe(true)
    expect(ignored('test/e2e/cli.test.ts')).toBe(true)
  })
})
