import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src/config/load.js'
import { configSchema } from '../../../src/config/schema.js'
import { hashKey } from '../../../src/tenants/directory.js'
import { problems } from './helpers.js'

const H1 = hashKey('sk-one')
const H2 = hashKey('sk-two')

function file(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'tenants-')), 'gw.yaml')
  writeFileSync(path, `simulator:\n  enabled: true\n${text}`)
  return path
}

describe('config: auth and tenants', () => {
  it('defaults: api-key auth on, no anonymous tenant, no tenants', () => {
    const c = configSchema.parse({})
    expect(c.auth).toEqual({ mode: 'api_key', header: 'x-tenant-id' })
    expect(c.tenants).toEqual([])
    const t = configSchema.parse({ tenants: [{ id: 'a', api_keys: [H1.toUpperCase()] }] }).tenants[0]
    expect(t).toEqual({
      id: 'a',
      api_keys: [H1],
      on_disallowed_class: 'reject',
      allow_demotion: false,
      weight: 1,
      limits: {},
    })
  })

  it('names every problem with its path: bad hash, unknown classes, duplicates, a bad id', () => {
    const path = file(`tenants:
  - id: team-a
    api_keys: [sk-plain-key, ${H1}]
    default_class: gold
    allowed_classes: [interactive, silver]
  - id: team-a
    api_keys: [${H1}]
  - id: "team b"
    default_class: batch
    allowed_classes: [interactive]
    limits: { rpm: ten }
`)
    const p = problems(() => loadConfig(path))
    expect(p).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /tenants\[0\]\.api_keys\[0\]: expected the SHA-256 hex digest of a key \(64 hex characters; `slo-gateway hash-key KEY` prints it\), never the key itself/,
        ),
        expect.stringMatching(/tenants\[2\]\.id: tenant ids are 1 to 64 letters, digits, _ \. and -/),
        expect.stringMatching(/tenants\[2\]\.limits\.rpm: expected a number, got 'ten'/),
      ]),
    )
    expect(p.join('\n')).not.toContain('sk-plain-key')
    const fixed = file(`tenants:
  - id: team-a
    api_keys: [${H1}]
    default_class: gold
    allowed_classes: [interactive, silver]
  - id: team-a
    api_keys: [${H2}, ${H1}]
  - id: team-c
    default_class: batch
    allowed_classes: [interactive]
`)
    expect(problems(() => loadConfig(fixed))).toEqual([
      `${fixed}: tenants[0].default_class: unknown class 'gold' (known: interactive, batch)`,
      `${fixed}: tenants[0].allowed_classes[1]: unknown class 'silver' (known: interactive, batch)`,
      `${fixed}: tenants[1].id: duplicate tenant id 'team-a' (also tenants[0])`,
      `${fixed}: tenants[1].api_keys[1]: duplicate key hash (also a key of tenants[0]): a key names one tenant`,
      `${fixed}: tenants[2].default_class: default class 'batch' is not in allowed_classes (interactive)`,
    ])
  })

  it('reports the cross-tenant problems even when another part of the file is wrong', () => {
    const path = file(`server:
  port: eighty
tenants:
  - id: x
  - id: x
auth:
  mode: kerberos
`)
    const p = problems(() => loadConfig(path)).join('\n')
    expect(p).toContain("tenants[1].id: duplicate tenant id 'x' (also tenants[0])")
    expect(p).toContain('auth.mode')
    expect(p).toContain('server.port')
  })

  it('the embedded default config serves anonymous requests as tenant demo', () => {
    const { config } = loadConfig(undefined)
    expect(config.auth.anonymous).toBe('demo')
  })
})
