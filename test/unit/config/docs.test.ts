import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { configKeyPaths } from '../../../src/config/key-paths.js'

const doc = readFileSync(join(import.meta.dirname, '../../../docs/config.md'), 'utf8')
const documented = new Set([...doc.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]))

describe('docs/config.md', () => {
  it('documents every key of the schema', () => {
    const missing = configKeyPaths().filter((p) => !documented.has(p))
    expect(missing).toEqual([])
  })

  it('documents no key the schema lacks', () => {
    const known = new Set(configKeyPaths())
    expect([...documented].filter((p) => p !== undefined && !known.has(p))).toEqual([])
  })
})
