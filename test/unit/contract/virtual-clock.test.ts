/**
 * The plan's virtual time: its timers run in due order at their instant, cancelled ones never;
 * and a plan run with admission queueing and shedding sets no real timer (the gateway's
 * dispatcher and deadline timer run on the virtual clock).
 */
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { configSchema, poolSchema } from '../../../src/config/schema.js'
import { VirtualClock } from '../../../src/contract/plan/virtual-clock.js'
import { runVirtual } from '../../../src/contract/plan/virtual-run.js'
import { loadWorkload } from '../../../src/loadgen/workload-load.js'
import { loadProfile } from '../../../src/sim/profile-loader.js'

afterEach(() => vi.restoreAllMocks())

describe('VirtualClock', () => {
  it('runs the timers due by now in due order (ties in the order set), those they set for now too', () => {
    const c = new VirtualClock()
    const ran: string[] = []
    c.schedule(10, () => ran.push('b'))
    c.schedule(5, () => {
      ran.push('a')
      c.schedule(0, () => ran.push('a+0'))
    })
    c.schedule(10, () => ran.push('c'))
    const cancel = c.schedule(7, () => ran.push('never'))
    cancel()
    expect(c.nextTimerAt).toBe(5)
    c.t = 5
    c.runDue()
    expect(ran).toEqual(['a', 'a+0'])
    c.t = 12
    c.runDue()
    expect(ran).toEqual(['a', 'a+0', 'b', 'c'])
    expect(c.nextTimerAt).toBe(Number.POSITIVE_INFINITY)
  })
})

describe('a plan run on virtual time', () => {
  it('sets no real timer, while admission queues, dispatches and sheds', () => {
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout')
    const setImmediateSpy = vi.spyOn(globalThis, 'setImmediate')
    const r = runVirtual({
      profile: loadProfile('tiny'),
      config: configSchema.parse({ tenants: [], admission: { max_prefill_tokens_per_endpoint: 512 } }),
      pool: poolSchema.parse({ name: 'sim', models: ['*'] }),
      workload: loadWorkload(join(import.meta.dirname, '..', '..', 'fixtures', 'plan', 'tiny-chat.yaml')),
      ratePerS: 300,
      replicas: 1,
      durationMs: 5_000,
      drainMs: 10_000,
      admission: true,
    })
    expect(r.refused).toBeGreaterThan(0)
    expect(r.good).toBeGreaterThan(0)
    expect(setTimeoutSpy).not.toHaveBeenCalled()
    expect(setImmediateSpy).not.toHaveBeenCalled()
  })
})
