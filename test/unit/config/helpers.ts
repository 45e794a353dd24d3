import { join } from 'node:path'
import { ConfigError } from '../../../src/config/load.js'

/** A file under test/fixtures/config. */
export const fixture = (name: string) => join(import.meta.dirname, '../../fixtures/config', name)

/** The problems of the ConfigError `fn` throws (fails when it throws none). */
export function problems(fn: () => unknown): readonly string[] {
  try {
    fn()
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
  throw new Error('expected a ConfigError')
}
