/**
 * Each doctor finding fires on a config (and engine facts, served by a real HTTP server as
 * a vLLM server serves them) built to trigger it, and not on the same config without the
 * fault.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { configSchema } from '../../../src/config/schema.js'
import { runDoctor } from '../../../src/contract/doctor.js'
import { startSim } from '../../../src/sim/index.js'
import { type EngineFactsSpec, type FakeEngine, startFakeEngine } from '../../helpers/fake-engine.js'

const GOOD_FACTS: EngineFactsSpec = { numGpuBlocks: 27_500, blockSize: 16, maxModelLen: 32_768, model: 'm' }

let engine: FakeEngine

beforeAll(async () => {
  engine = await startFakeEngine(GOOD_FACTS)
})
afterAll(async () => {
  await engine.close()
})

type Raw = Record<string, unknown>

function config(extra: { classes?: Raw; pool?: Raw; admission?: Raw } = {}) {
  return configSchema.parse({
    classes: extra.classes ?? {},
    admission: extra.admission ?? {},
    backends: {
      pools: [
        {
          name: 'p',
          models: ['m'],
          endpoints: [engine.url],
          capacity: { max_num_seqs: 256 },
          ...(extra.pool ?? {}),
        },
      ],
    },
    tenants: [],
  })
}

async function doctor(
  extra: Parameters<typeof config>[0] = {},
  facts: Partial<EngineFactsSpec> = {},
  profile: string | undefined = 'llama-3.1-8b-h100',
) {
  engine.facts = { ...GOOD_FACTS, ...facts }
  return runDoctor(config(extra), 'test.yaml', {
    offline: false,
    profile,
    timeoutMs: 2000,
    maxRequestKvShare: 0.25,
  })
}

const ids = (r: Awaited<ReturnType<typeof doctor>>, severity?: string) =>
  r.findings.filter((f) => severity === undefined || f.severity === severity).map((f) => f.id)

describe('slo-gateway doctor: each finding', () => {
  it('reads the facts from the server and finds nothing wrong with a sound config', async () => {
    const r = await doctor()
    expect(r.findings).toEqual([])
    expect(r.ok).toBe(true)
    const facts = r.contract[0]!.facts
    expect(facts.kvCapacityTokens).toEqual({ value: 440_000, source: `live ${engine.url}/metrics` })
    expect(facts.blockSize?.value).toBe(16)
    expect(facts.maxModelLen).toEqual({ value: 32_768, source: `live ${engine.url}/v1/models` })
    expect(facts.maxNumSeqs?.source).toBe('config backends.pools[0].capacity.max_num_seqs')
    expect(engine.hits.get('/metrics')).toBeGreaterThan(0)
  })

  it('kv-headroom: a class that dispatches at 0.95 KV usage is an error', async () => {
    const r = await doctor({ classes: { interactive: { max_kv_usage: 0.95 } } })
    const f = r.findings.find((x) => x.id === 'kv-headroom')
    expect(f).toMatchObject({
      severity: 'error',
      class: 'interactive',
      path: 'classes.interactive.max_kv_usage',
    })
    expect(f?.numbers.maxKvUsage).toBe(0.95)
    expect(r.ok).toBe(false)
  })

  it('kv-overcommit: max_num_seqs x typical context above what the served KV cache holds', async () => {
    // 2,000 blocks of 16: 32,000 tokens; 256 sequences of 1,024 tokens need 262,144
    const r = await doctor({}, { numGpuBlocks: 2000, maxModelLen: 4096 })
    const f = r.findings.find((x) => x.id === 'kv-overcommit')
    expect(f?.severity).toBe('warning')
    expect(f?.numbers).toMatchObject({ maxNumSeqs: 256, kvCapacityTokens: 32_000, sequencesThatFit: 25 })
    // the same config on the larger cache: silent
    expect(ids(await doctor())).not.toContain('kv-overcommit')
  })

  it('class-isolation: batch at interactive priority is an error, batch above its KV limit a warning', async () => {
    const same = await doctor({ classes: { batch: { priority: 0 } } })
    expect(same.findings.find((x) => x.id === 'class-isolation')).toMatchObject({
      severity: 'error',
      path: 'classes.batch.priority',
    })
    const kv = await doctor({ classes: { batch: { max_kv_usage: 0.85 } } })
    expect(kv.findings.find((x) => x.id === 'class-isolation')).toMatchObject({
      severity: 'warning',
      path: 'classes.batch.max_kv_usage',
    })
    const off = await doctor({ admission: { enabled: false } })
    expect(off.findings.find((x) => x.id === 'class-isolation')?.path).toBe('admission.enabled')
  })

  it('context-hog: a max_model_len that holds 30% of the served KV cache', async () => {
    const r = await doctor({}, { maxModelLen: 131_072 })
    const f = r.findings.find((x) => x.id === 'context-hog')
    expect(f?.severity).toBe('warning')
    expect(f?.numbers).toMatchObject({
      maxModelLen: 131_072,
      kvCapacityTokens: 440_000,
      safeMaxModelLen: 110_000,
    })
  })

  it('tpot-unattainable: below one step is an error, below the step at the KV batch a warning', async () => {
    const never = await doctor({ classes: { interactive: { slo: { tpot_ms: 5 } } } })
    expect(never.findings.find((x) => x.id === 'tpot-unattainable')?.severity).toBe('error')
    const batch = await doctor({ classes: { interactive: { slo: { tpot_ms: 20 } } } })
    const f = batch.findings.find((x) => x.id === 'tpot-unattainable')
    expect(f?.severity).toBe('warning')
    expect(f?.numbers.kvBatch).toBe(256)
    expect(Number(f?.numbers.batchWithinTpot)).toBeLessThan(256)
    expect(Number(f?.numbers.batchWithinTpot)).toBeGreaterThan(0)
  })

  it('ttft-unattainable: an objective under the idle prefill of the typical prompt', async () => {
    // 512 tokens on the 8B H100 profile: ~19 ms idle
    const r = await doctor({ classes: { interactive: { slo: { ttft_ms: 15 } } } })
    const f = r.findings.find((x) => x.id === 'ttft-unattainable')
    expect(f?.severity).toBe('error')
    expect(Number(f?.numbers.idlePrefillMs)).toBeGreaterThan(15)
    expect(ids(await doctor({ classes: { interactive: { slo: { ttft_ms: 100 } } } }))).not.toContain(
      'ttft-unattainable',
    )
  })

  it('fail-open-stale: a pool that fails open while admission relies on its metrics', async () => {
    const r = await doctor({ pool: { fail_open: true } })
    expect(r.findings.find((x) => x.id === 'fail-open-stale')).toMatchObject({
      severity: 'warning',
      path: 'backends.pools[0].fail_open',
    })
  })

  it('scrape-slower-than-ttft: a scrape interval over the TTFT objective', async () => {
    const r = await doctor({ pool: { scrape_interval_ms: 1000 } })
    expect(r.findings.find((x) => x.id === 'scrape-slower-than-ttft')?.numbers).toEqual({
      scrapeIntervalMs: 1000,
      ttftMs: 500,
    })
  })

  it('facts-unavailable and no-step-model: what it could not read is said, as info', async () => {
    const down = await startFakeEngine(GOOD_FACTS)
    await down.close()
    const cfg = configSchema.parse({
      backends: { pools: [{ name: 'p', models: ['m'], endpoints: [down.url] }] },
      tenants: [],
    })
    const r = await runDoctor(cfg, 'x.yaml', { offline: false, timeoutMs: 2000, maxRequestKvShare: 0.25 })
    expect(ids(r, 'info').sort()).toEqual(['facts-unavailable', 'no-step-model'])
    expect(r.ok).toBe(true)
    expect(r.contract[0]!.facts).toEqual({})
  })

  it("reads a llama.cpp server's slots from its /props, as the gateway does; the config still wins", async () => {
    const sim = await startSim({
      replicas: 1,
      port: 0,
      profile: 'tiny',
      host: '127.0.0.1',
      metricsFormat: 'llamacpp',
    })
    try {
      const url = sim.replicas[0]!.url
      const pool = (extra: Raw) =>
        configSchema.parse({
          backends: { pools: [{ name: 'p', models: ['*'], engine: 'llamacpp', endpoints: [url], ...extra }] },
          tenants: [],
        })
      const opts = { offline: false, timeoutMs: 2000, maxRequestKvShare: 0.25 }
      const read = await runDoctor(pool({}), 'x.yaml', opts)
      // the tiny profile runs 16 sequences at once
      expect(read.contract[0]!.facts.maxNumSeqs).toEqual({
        value: 16,
        source: `live ${new URL(url).origin}/props`,
      })
      const set = await runDoctor(pool({ capacity: { max_num_seqs: 4 } }), 'x.yaml', opts)
      expect(set.contract[0]!.facts.maxNumSeqs?.value).toBe(4)
    } finally {
      await sim.close()
    }
  })
})
