/**
 * The MetricAdapter contract, for every registered adapter: parse never throws, garbage is
 * undefined (stale), and the simulator's rendering of the engine's format reads back as the
 * simulated engine's state.
 */
import { describe, expect, it } from 'vitest'
import { adapterFor, adapterNames } from '../../../../src/backends/adapters/registry.js'
import { ENGINES } from '../../../../src/config/schema.js'
import { SimEngine } from '../../../../src/sim/engine.js'
import { getMetricFormat } from '../../../../src/sim/metric-format-registry.js'
import { loadProfile } from '../../../../src/sim/profile-loader.js'
import { SimRequest } from '../../../../src/sim/sim-request.js'
import { fixture } from './fixture.js'

const GARBAGE = [
  '<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>',
  '{"detail":"Not Found"}',
  'Internal Server Error',
  '\u0000\u0001\u0002\u00ff\ufffd',
  'vllm:num_requests_running{model_name="m" 3\n',
  '}}}{{{',
]

function busyEngine(): SimEngine {
  const engine = new SimEngine({ profile: loadProfile('tiny') })
  const sink = { onToken: () => {} }
  for (let i = 0; i < 24; i++) {
    engine.submit(
      new SimRequest({
        id: `r${i}`,
        promptTokens: 100,
        targetOutput: 50,
        finishReason: 'stop',
        blockHashes: [],
        sink,
        arrival: 0,
      }),
    )
  }
  engine.beginStep(0)
  engine.finishStep(5)
  return engine
}

describe('every adapter', () => {
  it('is registered for every engine name of the config', () => {
    expect(adapterNames().sort()).toEqual([...ENGINES].sort())
    for (const e of ENGINES) expect(adapterFor(e).engine).toBe(e)
  })

  it("does not read another engine's exposition as its own", () => {
    const own: Record<string, string> = {
      vllm: 'vllm-v1.txt',
      sglang: 'sglang.txt',
      tgi: 'tgi.txt',
      llamacpp: 'llamacpp.txt',
      trtllm: 'trtllm.txt',
    }
    for (const engine of ['sglang', 'tgi', 'llamacpp', 'trtllm', 'vllm'] as const) {
      for (const [other, file] of Object.entries(own)) {
        if (other !== engine)
          expect(adapterFor(engine).parse(fixture(file)), `${engine} on ${file}`).toBeUndefined()
      }
    }
  })

  for (const engine of ENGINES) {
    const adapter = adapterFor(engine)
    it(`${engine}: garbage is undefined and never throws`, () => {
      for (const text of GARBAGE) expect(adapter.parse(text)).toBeUndefined()
      expect(() => adapter.parse(undefined as unknown as string)).not.toThrow()
      expect(() => adapter.parse('x'.repeat(1_000_000))).not.toThrow()
    })

    it(`${engine}: reads the simulator's ${engine} format back`, () => {
      const sim = busyEngine()
      const text = getMetricFormat(engine).render({ modelName: 'sim/tiny', engine: sim, nowMs: 5 })
      const load = adapter.parse(text)
      expect(load?.waiting).toBe(sim.numWaiting)
      expect(load?.running).toBe(sim.numRunning)
      expect(sim.numRunning).toBeGreaterThan(0)
      expect(sim.numWaiting).toBeGreaterThan(0)
      if (!adapter.unsupported.includes('kvUsage')) expect(load?.kvUsage).toBeCloseTo(sim.kv.usage, 6)
    })
  }
})
