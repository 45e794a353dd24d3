/**
 * The doctor command as CI runs it: exit code 1 on an error-level finding, 0 otherwise, and
 * `--json` in the documented shape (docs/contract.md, "doctor --json"), with the engine's
 * facts read from a real HTTP server.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHECKS, INFO_IDS } from '../../src/contract/findings/registry.js'
import { runCli } from '../helpers/cli.js'
import { type FakeEngine, startFakeEngine } from '../helpers/fake-engine.js'

let engine: FakeEngine
const dir = mkdtempSync(join(tmpdir(), 'doctor-'))
const DOC = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'contract.md'), 'utf8')

function configFile(name: string, classes: string): string {
  const file = join(dir, name)
  writeFileSync(
    file,
    `backends:\n  pools:\n    - name: p\n      models: [m]\n      endpoints: [${engine.url}]\n      capacity: { max_num_seqs: 256 }\n${classes}tenants: []\n`,
  )
  return file
}

beforeAll(async () => {
  engine = await startFakeEngine({ numGpuBlocks: 27_500, blockSize: 16, maxModelLen: 32_768, model: 'm' })
})
afterAll(async () => {
  await engine.close()
})

describe('slo-gateway doctor (CLI)', () => {
  it('exits 0 on a sound config and prints the contract', async () => {
    const p = runCli(['doctor', '--config', configFile('ok.yaml', ''), '--profile', 'llama-3.1-8b-h100'])
    expect(await p.exited).toBe(0)
    expect(p.stdout).toContain('0 error(s), 0 warning(s)')
    expect(p.stdout).toContain('Contract: pool p')
    expect(p.stdout).toContain(`kvCapacityTokens 440000 (live ${engine.url}/metrics)`)
  })

  it('exits 1 on an error-level finding; --json has the documented shape', async () => {
    const file = configFile('bad.yaml', 'classes:\n  batch: { max_kv_usage: 0.95, priority: 0 }\n')
    const p = runCli(['doctor', '--config', file, '--json', '--profile', 'llama-3.1-8b-h100'])
    expect(await p.exited).toBe(1)
    const r = JSON.parse(p.stdout) as Record<string, unknown>
    expect(Object.keys(r)).toEqual(['version', 'config', 'ok', 'counts', 'findings', 'contract'])
    expect(r.version).toBe(1)
    expect(r.ok).toBe(false)
    const findings = r.findings as Record<string, unknown>[]
    expect(findings.map((f) => f.id)).toEqual(expect.arrayContaining(['kv-headroom', 'class-isolation']))
    for (const f of findings) {
      for (const k of ['id', 'severity', 'path', 'title', 'numbers', 'why', 'fix'])
        expect(f).toHaveProperty(k)
    }
    expect(findings[0]!.severity).toBe('error')
    const pool = (r.contract as Record<string, unknown>[])[0]!
    expect(Object.keys(pool)).toEqual([
      'pool',
      'models',
      'engine',
      'replicas',
      'stepModel',
      'facts',
      'classes',
    ])
  })

  it('exits 2 on a bad flag, 1 on a bad config file', async () => {
    const flag = runCli(['doctor', '--jsn'])
    expect(await flag.exited).toBe(2)
    expect(flag.stderr).toContain('did you mean --json?')
    const missing = runCli(['doctor', '--config', join(dir, 'nope.yaml')])
    expect(await missing.exited).toBe(1)
  })

  it('docs/contract.md documents every finding and every field of --json', () => {
    for (const { id } of CHECKS) expect(DOC).toContain(`\`${id}\``)
    for (const id of INFO_IDS) expect(DOC).toContain(`\`${id}\``)
    for (const k of ['version', 'ok', 'counts', 'findings', 'contract', 'numbers', 'why', 'fix', 'safeZone'])
      expect(DOC).toContain(`\`${k}\``)
  })
})
