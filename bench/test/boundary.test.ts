import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '../..')

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name))
}

describe('the bench stays out of the package', () => {
  it('nothing in src/ or test/ imports from bench/', () => {
    const offenders = ['src', 'test'].flatMap((dir) =>
      tsFiles(join(ROOT, dir)).filter((f) => /from '(\.\.\/)+bench\//.test(readFileSync(f, 'utf8'))),
    )
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([])
  })

  it('the build compiles src/ only and the package ships dist/, config/ and web/ (the dashboard)', () => {
    const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] }
    expect(build.include).toEqual(['src'])
    expect(pkg.files).toEqual(['dist', 'config', 'web'])
  })

  it('npm pack lists no benchmark or test file', () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
      encoding: 'utf8',
    })
    const files = (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path)
    expect(files).toContain('package.json')
    expect(files.filter((p) => /(^|\/)(bench|test|tests|scripts)\//.test(p) || /\.test\./.test(p))).toEqual(
      [],
    )
  })
})
