import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..', '..')
const sha = (s: string) => createHash('sha256').update(s).digest('hex')

function hashKey(args: string[], input?: string) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), 'hash-key', ...args], {
    cwd: ROOT,
    input: input ?? '',
    encoding: 'utf8',
  })
}

describe('slo-gateway hash-key', () => {
  it('prints the SHA-256 hex of the key given as an argument', () => {
    const p = hashKey(['sk-team-a'])
    expect(p.status).toBe(0)
    expect(p.stdout).toBe(`${sha('sk-team-a')}\n`)
  })

  it('reads the key from stdin, dropping one trailing newline', () => {
    const p = hashKey([], 'sk-from-stdin\n')
    expect(p.status).toBe(0)
    expect(p.stdout).toBe(`${sha('sk-from-stdin')}\n`)
  })

  it('refuses an empty key with its usage (exit 2)', () => {
    const p = hashKey([], '')
    expect(p.status).toBe(2)
    expect(p.stderr).toContain('slo-gateway hash-key: the key is empty')
  })
})
