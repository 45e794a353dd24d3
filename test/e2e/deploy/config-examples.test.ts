/**
 * Every file in config/examples/ passes `slo-gateway check-config` (the real CLI), and each
 * gateway.yaml the Kubernetes overlays turn into a ConfigMap is one of them, byte for byte,
 * so the examples are what is deployed. Each tenants.yaml of a Secret passes too, as the
 * pods give it: `--set tenants=...`.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runCli } from '../../helpers/cli.js'
import { K8S, ROOT } from './render.js'

const EXAMPLES = join(ROOT, 'config', 'examples')
const examples = readdirSync(EXAMPLES)
  .filter((f) => f.endsWith('.yaml'))
  .sort()

function filesNamed(dir: string, name: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f === name || f.endsWith(`/${name}`))
    .map((f) => join(dir, f))
    .sort()
}

describe('config/examples', () => {
  it('has one per deployment mode', () => {
    expect(examples).toEqual(
      expect.arrayContaining(['front-door.yaml', 'redis-shared-limits.yaml', 'sidecar.yaml']),
    )
  })

  for (const f of examples) {
    it(`slo-gateway check-config config/examples/${f}`, async () => {
      const p = runCli(['check-config', join(EXAMPLES, f)])
      const code = await p.exited
      expect(p.stderr).toBe('')
      expect(code, p.stderr).toBe(0)
      expect(p.stdout).toContain(`${join(EXAMPLES, f)}: ok (`)
    })
  }
})

describe('deploy/k8s configs', () => {
  const configs = filesNamed(K8S, 'gateway.yaml')
  const tenants = filesNamed(K8S, 'tenants.yaml')

  it('are config/examples files, byte for byte', () => {
    expect(configs.length).toBeGreaterThanOrEqual(3)
    const byText = new Map(examples.map((f) => [readFileSync(join(EXAMPLES, f), 'utf8'), f]))
    const unmatched = configs
      .filter((c) => !byText.has(readFileSync(c, 'utf8')))
      .map((c) => relative(ROOT, c))
    expect(unmatched, 'copy the example over it (or the other way round)').toEqual([])
  })

  for (const t of tenants) {
    it(`check-config passes ${relative(ROOT, t)} given as --set tenants=...`, async () => {
      const p = runCli([
        'check-config',
        join(EXAMPLES, 'front-door.yaml'),
        '--set',
        `tenants=${readFileSync(t, 'utf8')}`,
      ])
      const code = await p.exited
      expect(code, p.stderr).toBe(0)
    })
  }
})
