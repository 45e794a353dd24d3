import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src/config/load.js'
import { configSchema } from '../../../src/config/schema.js'
import { problems } from './helpers.js'

function file(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'tenant-slo-')), 'gw.yaml')
  writeFileSync(path, `simulator:\n  enabled: true\n${text}`)
  return path
}

/** interactive lets tenants set TTFT within 100..2000 ms; nothing else may change. */
const BOUNDED = `classes:
  interactive:
    tenant_slo_bounds:
      ttft_ms: { min: 100, max: 2000 }
`

describe('config: tenant SLO overrides within the class bounds', () => {
  it('accepts an override within the bounds, and keeps the bounds on the class', () => {
    const { config } = loadConfig(
      file(`${BOUNDED}tenants:
  - id: team-a
    slo:
      interactive: { ttft_ms: 250 }
  - id: team-b
    slo:
      interactive: { ttft_ms: 100 }
  - id: team-c
`),
    )
    expect(config.classes.interactive?.tenant_slo_bounds).toEqual({ ttft_ms: { min: 100, max: 2000 } })
    expect(config.tenants.map((t) => t.slo)).toEqual([
      { interactive: { ttft_ms: 250 } },
      { interactive: { ttft_ms: 100 } }, // the bounds are inclusive
      undefined,
    ])
    // the built-in classes allow no overrides until the operator sets bounds
    expect(configSchema.parse({}).classes.interactive?.tenant_slo_bounds).toBeUndefined()
  })

  it('refuses an override outside the bounds, one without bounds, and one for an unknown or disallowed class', () => {
    const path = file(`${BOUNDED}tenants:
  - id: team-a
    slo:
      interactive: { ttft_ms: 50, tpot_ms: 20 }
  - id: team-b
    slo:
      interactive: { ttft_ms: 2001 }
      batch: { e2e_ms: 60000 }
      gold: { ttft_ms: 300 }
  - id: team-c
    allowed_classes: [batch]
    slo:
      interactive: { ttft_ms: 300 }
`)
    expect(problems(() => loadConfig(path))).toEqual([
      `${path}: tenants[0].slo.interactive.ttft_ms: 50 is outside the bounds of class 'interactive' (classes.interactive.tenant_slo_bounds.ttft_ms: 100 to 2000)`,
      `${path}: tenants[0].slo.interactive.tpot_ms: class 'interactive' allows no tenant override of tpot_ms (no classes.interactive.tenant_slo_bounds.tpot_ms: the operator sets { min, max } there to allow one)`,
      `${path}: tenants[1].slo.interactive.ttft_ms: 2001 is outside the bounds of class 'interactive' (classes.interactive.tenant_slo_bounds.ttft_ms: 100 to 2000)`,
      `${path}: tenants[1].slo.batch.e2e_ms: class 'batch' allows no tenant override of e2e_ms (no classes.batch.tenant_slo_bounds.e2e_ms: the operator sets { min, max } there to allow one)`,
      `${path}: tenants[1].slo.gold: unknown class 'gold' (known: interactive, batch)`,
      `${path}: tenants[2].slo.interactive: the tenant may not use class 'interactive' (allowed_classes: batch): this override would never apply`,
    ])
  })

  it('refuses bounds for an objective the class does not set, and bounds whose min is above max', () => {
    const path = file(`classes:
  interactive:
    tenant_slo_bounds:
      ttft_ms: { min: 900, max: 100 }
  batch:
    tenant_slo_bounds:
      ttft_ms: { min: 100, max: 1000 }
      e2e_ms: { min: 60000, max: 3600000 }
`)
    expect(problems(() => loadConfig(path))).toEqual([
      `${path}: classes.interactive.tenant_slo_bounds.ttft_ms.min: min (900) is above max (100)`,
      `${path}: classes.batch.tenant_slo_bounds.ttft_ms: the class sets no slo.ttft_ms for a tenant to override: set slo.ttft_ms, or remove these bounds`,
    ])
  })

  it('names the keys an override takes when one is misspelt', () => {
    const path = file(`${BOUNDED}tenants:
  - id: team-a
    slo:
      interactive: { ttft: 250 }
`)
    expect(problems(() => loadConfig(path))).toEqual([
      `${path}: tenants[0].slo.interactive: unknown key 'ttft': did you mean 'ttft_ms'?`,
    ])
  })

  it('still checks the overrides when another part of the file is wrong', () => {
    const path = file(`${BOUNDED}server:
  port: eighty
tenants:
  - id: team-a
    slo:
      interactive: { ttft_ms: 5 }
`)
    const p = problems(() => loadConfig(path)).join('\n')
    expect(p).toContain('server.port')
    expect(p).toContain("tenants[0].slo.interactive.ttft_ms: 5 is outside the bounds of class 'interactive'")
  })
})
