/**
 * A TPOT objective no batch size holds (tpot-reachable.ts): under the engine's least step,
 * every request misses it. Admission says so at startup (from the priors: the config's
 * step_ms) and again, once, when a learned step time reveals it; /admin/state shows it.
 */
import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import { unreachableTpot, unreachableTpotMessage } from '../../../src/admission/tpot-reachable.js'
import { EngineFacts } from '../../../src/backends/engine-facts.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { FakePool, fakeBackends } from './fake-pool.js'

class Logs {
  readonly lines: { obj: Record<string, unknown>; msg: string }[] = []
  warn(obj: object, msg?: string): void {
    this.lines.push({ obj: obj as Record<string, unknown>, msg: msg ?? '' })
  }
  tpot(): { obj: Record<string, unknown>; msg: string }[] {
    return this.lines.filter((l) => l.msg.includes('TPOT objective'))
  }
}

function config(stepMs?: number) {
  return configSchema.parse({
    classes: { interactive: { slo: { ttft_ms: 2_000, tpot_ms: 20 } } },
    admission: stepMs === undefined ? {} : { estimator: { step_ms: stepMs } },
    backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
  })
}

describe('unreachableTpot', () => {
  it('lists the classes whose objective is under the least step, with its source', () => {
    const classes = {
      interactive: { slo: { tpot_ms: 20 } },
      batch: { slo: {} },
      fast: { slo: { tpot_ms: 40 } },
    }
    expect(unreachableTpot(classes, { value: 25.004, source: 'measured' })).toEqual([
      { class: 'interactive', tpotMs: 20, leastTpotMs: 25, source: 'measured' },
    ])
    expect(unreachableTpot(classes, { value: 19, source: 'config' })).toEqual([])
    const msg = unreachableTpotMessage('main', {
      class: 'interactive',
      tpotMs: 20,
      leastTpotMs: 25,
      source: 'engine_metric',
    })
    expect(msg).toContain('classes.interactive.slo.tpot_ms')
    expect(msg).toContain('engine metric')
  })
})

describe('admission warns of an unreachable TPOT objective', () => {
  it('at startup, from a configured step time over the objective', () => {
    const logs = new Logs()
    const a = new Admission(config(30), fakeBackends(new FakePool()), new ManualClock(0), undefined, logs)
    expect(logs.tpot()).toHaveLength(1)
    expect(logs.tpot()[0]?.obj).toMatchObject({
      pool: 'main',
      class: 'interactive',
      tpotMs: 20,
      leastTpotMs: 30,
      source: 'config',
    })
    const state = a.state() as { pools: { unreachableTpot: unknown[] }[] }
    expect(state.pools[0]?.unreachableTpot).toEqual([
      { class: 'interactive', tpotMs: 20, leastTpotMs: 30, source: 'config' },
    ])
  })

  it('not at startup when the priors hold it; once, when the learned step time shows it does not', () => {
    const logs = new Logs()
    const pool = new FakePool()
    const a = new Admission(config(), fakeBackends(pool), new ManualClock(0), undefined, logs)
    expect(logs.tpot()).toHaveLength(0) // the default prior step (15 ms) is under 20 ms
    const facts = new EngineFacts({
      engine: 'vllm',
      stepMs: { value: 15, source: 'default_prior' },
      prefillTokensPerS: { value: 20_000, source: 'default_prior' },
    })
    pool.facts = facts
    a.pumpAll() // a scrape landed: nothing learned yet
    expect(logs.tpot()).toHaveLength(0)
    for (const ms of [26, 25, 27, 25]) facts.observeStepWindow(ms, 10) // the engine steps in ~25 ms
    a.pumpAll()
    a.pumpAll() // said once
    expect(logs.tpot()).toHaveLength(1)
    expect(logs.tpot()[0]?.obj).toMatchObject({ class: 'interactive', tpotMs: 20, source: 'measured' })
    expect(logs.tpot()[0]?.obj.leastTpotMs).toBeGreaterThanOrEqual(25)
    const state = a.state() as { pools: { unreachableTpot: { source: string }[] }[] }
    expect(state.pools[0]?.unreachableTpot[0]?.source).toBe('measured')
  })
})
