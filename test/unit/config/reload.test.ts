/**
 * ConfigReloader on its own: what it applies (auth and tenants), what it names as needing a
 * restart, and what it refuses (a load that fails, tenants that name a class the running
 * config lacks), always keeping the running config on a refusal; each reload counted.
 */
import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../../src/config/load.js'
import { configSchema, type GatewayConfig } from '../../../src/config/schema.js'
import { ConfigReloader, changedSections } from '../../../src/reload.js'

function logger() {
  const lines: { level: string; msg: string }[] = []
  const at = (level: string) => (_obj: unknown, msg: string) => lines.push({ level, msg })
  return { lines, log: { info: at('info'), warn: at('warn'), error: at('error') } as never }
}

function setup(first: GatewayConfig) {
  const applied: GatewayConfig[] = []
  let next: () => GatewayConfig = () => first
  const { lines, log } = logger()
  const reloader = new ConfigReloader({
    target: { baseConfig: first, applyTenants: (c) => applied.push(c) },
    load: () => next(),
    logger: log,
  })
  return { reloader, applied, lines, setNext: (f: () => GatewayConfig) => (next = f) }
}

const base = configSchema.parse({ tenants: [{ id: 'a' }] })

describe('ConfigReloader', () => {
  it('applies new tenants and names other changed sections as needing a restart', () => {
    const { reloader, applied, lines, setNext } = setup(base)
    setNext(() => configSchema.parse({ tenants: [{ id: 'a' }, { id: 'b' }], server: { port: 9999 } }))
    const out = reloader.reload('test')
    expect(out).toEqual({ ok: true, changed: ['server', 'tenants'], restartNeeded: ['server'] })
    expect(applied.map((c) => c.tenants.map((t) => t.id))).toEqual([['a', 'b']])
    expect(lines.find((l) => l.level === 'warn')?.msg).toContain(
      'server changed and take effect only on a restart',
    )
  })

  it('refuses a file that does not load, with its problems, and applies nothing', () => {
    const { reloader, applied, lines, setNext } = setup(base)
    setNext(() => {
      throw new ConfigError(['tenants[0].id: bad'])
    })
    expect(reloader.reload('test')).toEqual({ ok: false, problems: ['tenants[0].id: bad'] })
    expect(applied).toEqual([])
    expect(lines[0]).toMatchObject({ level: 'error' })
    expect(lines[0]!.msg).toContain('the running config stays')
  })

  it('refuses tenants that need a class only a restart would bring', () => {
    const { reloader, applied, setNext } = setup(base)
    setNext(() =>
      configSchema.parse({
        classes: { gold: { priority: 0, slo: { ttft_ms: 200 }, max_kv_usage: 0.8, reject_on_ttft: true } },
        tenants: [{ id: 'a', default_class: 'gold' }],
      }),
    )
    const out = reloader.reload('test')
    expect(out.ok).toBe(false)
    expect(applied).toEqual([])
  })

  it('counts each reload on the registry: applied or refused', async () => {
    const registry = new Registry()
    let next: () => GatewayConfig = () => base
    const reloader = new ConfigReloader({
      target: { baseConfig: base, applyTenants: () => {} },
      load: () => next(),
      logger: logger().log,
      registry,
    })
    const count = async (result: string) =>
      (await registry.getSingleMetric('slo_gateway_config_reloads_total')?.get())?.values.find(
        (v) => v.labels.result === result,
      )?.value
    expect([await count('applied'), await count('refused')]).toEqual([0, 0])
    reloader.reload('test')
    next = () => {
      throw new ConfigError(['x: bad'])
    }
    reloader.reload('test')
    reloader.reload('test')
    expect([await count('applied'), await count('refused')]).toEqual([1, 2])
  })

  it('compares sections by value', () => {
    expect(changedSections(base, configSchema.parse({ tenants: [{ id: 'a' }] }))).toEqual([])
  })
})
