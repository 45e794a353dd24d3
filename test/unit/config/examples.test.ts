import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src/config/load.js'

const dir = join(import.meta.dirname, '../../../config/examples')

describe('config/examples', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'))
  it('has examples', () => expect(files.length).toBeGreaterThan(0))
  for (const f of files) {
    it(`${f} is valid`, () => {
      expect(() => loadConfig(join(dir, f))).not.toThrow()
    })
  }
})
