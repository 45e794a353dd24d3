import { readFileSync } from 'node:fs'

export const fixture = (name: string): string =>
  readFileSync(new URL(`../../../fixtures/metrics/${name}`, import.meta.url), 'utf8')
