/** What a newcomer reads first: the licence the package declares, and a README that shows the CLI as installed. */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '../..')
const read = (f: string) => readFileSync(join(ROOT, f), 'utf8')

describe('the project', () => {
  it('ships the licence package.json names', () => {
    const pkg = JSON.parse(read('package.json')) as { license: string }
    expect(pkg.license).toBe('Apache-2.0')
    const license = read('LICENSE')
    expect(license).toContain('Apache License')
    expect(license).toContain('Version 2.0, January 2004')
  })

  it('shows the CLI as `npx slo-gateway`, not as a path into dist/', () => {
    const readme = read('README.md')
    expect(readme).toContain('npx slo-gateway serve')
    expect(readme).not.toMatch(/node dist\/cli\.js/)
  })
})
