/** docs/metrics.md names every metric, recording rule, alert and telemetry config key. */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import {
  BACKEND_MODULE_METRICS,
  METRICS,
  RELOAD_MODULE_METRICS,
  TENANT_MODULE_METRICS,
} from '../../../src/telemetry/index.js'
import { testConfig } from './fixtures.js'

const root = (p: string) => fileURLToPath(new URL(`../../../${p}`, import.meta.url))
const doc = readFileSync(root('docs/metrics.md'), 'utf8')

type RuleFile = { groups: { rules: { record?: string; alert?: string }[] }[] }
const rules = (f: string) => (parse(readFileSync(root(f), 'utf8')) as RuleFile).groups.flatMap((g) => g.rules)

/** `a:b:ratio_rate5m` is documented as itself, as `…:p90_5m` or as `…:ratio_rate{5m,…}`. */
function documented(name: string): boolean {
  if (doc.includes(`\`${name}\``)) return true
  const i = name.lastIndexOf(':')
  const suffix = name.slice(i + 1)
  if (doc.includes(`\`…:${suffix}\``)) return true
  const m = /^(.*ratio_rate)(\w+)$/.exec(name)
  return (
    m !== null &&
    new RegExp(`\`${m[1]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\{[^}]*\\b${m[2]}\\b`).test(doc)
  )
}

describe('docs/metrics.md', () => {
  it('documents every metric', () => {
    for (const name of [
      ...Object.values(METRICS),
      ...BACKEND_MODULE_METRICS,
      ...TENANT_MODULE_METRICS,
      ...RELOAD_MODULE_METRICS,
    ])
      expect(doc, name).toContain(`\`${name}\``)
  })

  it('documents every recording rule and alert', () => {
    for (const r of rules('deploy/prometheus/recording-rules.yml'))
      expect(documented(r.record!), r.record).toBe(true)
    for (const r of rules('deploy/prometheus/alerts.yml')) expect(doc, r.alert).toContain(`\`${r.alert}\``)
  })

  it('documents every telemetry config key', () => {
    for (const key of Object.keys(testConfig().telemetry)) expect(doc, key).toContain(`\`${key}\``)
  })
})
