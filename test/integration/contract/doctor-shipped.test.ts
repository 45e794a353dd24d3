/** doctor stays silent (no error, no warning) on every config the project ships. */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src/config/load.js'
import { runDoctor } from '../../../src/contract/doctor.js'

const CONFIG = join(import.meta.dirname, '..', '..', '..', 'config')
const FILES = [
  ...readdirSync(CONFIG)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(CONFIG, f)),
  ...readdirSync(join(CONFIG, 'examples'))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(CONFIG, 'examples', f)),
]

describe('slo-gateway doctor on the shipped configs', () => {
  it('finds the shipped configs', () => {
    expect(FILES.length).toBeGreaterThanOrEqual(6)
  })

  for (const file of FILES) {
    it(`${file.slice(CONFIG.length + 1)}: no error or warning`, async () => {
      const { config } = loadConfig(file)
      const r = await runDoctor(config, file, { offline: true, timeoutMs: 500, maxRequestKvShare: 0.25 })
      expect(r.findings.filter((f) => f.severity !== 'info')).toEqual([])
      expect(r.ok).toBe(true)
      expect(r.contract.length).toBeGreaterThan(0)
    })
  }

  it('judges the embedded default with its simulator profile: the contract has a safe zone', async () => {
    const { config } = loadConfig(join(CONFIG, 'gateway.yaml'))
    const r = await runDoctor(config, 'gateway.yaml', {
      offline: true,
      timeoutMs: 500,
      maxRequestKvShare: 0.25,
    })
    const pool = r.contract[0]!
    expect(pool.stepModel).toBe('profile llama-3.1-8b-h100')
    expect(pool.replicas).toBe(2)
    const interactive = pool.classes.find((c) => c.class === 'interactive')!
    expect(interactive.safeZone.concurrency).toBeGreaterThan(0)
    expect(interactive.safeZone.ratePerReplica).toBeGreaterThan(0)
  })
})
