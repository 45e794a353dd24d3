/**
 * A llama.cpp server says how many requests it runs at once (`GET /props`: `total_slots`,
 * its `--parallel`). The gateway reads it when the pool's engine is llamacpp and
 * `capacity.max_num_seqs` is not set, so it sends no more than that at once: the rest wait
 * in its own queue, where they are predicted (or are refused with an honest Retry-After),
 * not in the server's, where a burst of six to a four-slot server had two first tokens
 * come 2.3 and 3.7 s after a predicted 189 and 206 ms. The simulator in llama.cpp's
 * metrics dialect serves the same /props.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { slotsFromProps } from '../../../src/backends/engine-info.js'
import { type SimHandle, startSim } from '../../../src/sim/index.js'
import { type AdmissionGateway, startAdmissionGateway, streamChat } from '../../helpers/admission-gateway.js'
import { sleep } from '../../helpers/upstream.js'

const SLOTS = 2
let sim: SimHandle
let gw: AdmissionGateway

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'slots-'))
  const profile = join(dir, 'slots.yaml')
  writeFileSync(
    profile,
    [
      'name: slots',
      'model: local/slots',
      `engine: { block_size: 16, num_gpu_blocks: 2048, max_num_seqs: ${SLOTS}, max_num_batched_tokens: 512, max_model_len: 4096, enable_prefix_caching: false }`,
      'step_time: { base_ms: 20, per_prefill_token_ms: 0.05, per_decode_seq_ms: 1, per_context_token_ms: 0 }',
      'output_tokens: { distribution: fixed, tokens: 30 }',
      '',
    ].join('\n'),
  )
  sim = await startSim({ replicas: 1, port: 0, profile, host: '127.0.0.1', metricsFormat: 'llamacpp' })
  gw = await startAdmissionGateway({
    endpoints: [sim.replicas[0]!.url],
    pool: { engine: 'llamacpp' },
    raw: { classes: { interactive: { slo: { ttft_ms: 2000, tpot_ms: 1000 } } } },
  })
})

afterAll(async () => {
  await gw?.close()
  await sim?.close()
})

const endpoint = () => gw.backends.pools()[0]?.endpoints()[0]
/** The endpoint's engine facts as /admin/state shows them. */
const facts = () =>
  (
    gw.backends.pools()[0]?.views()[0]?.facts as { state?: () => { maxNumSeqs: unknown } } | undefined
  )?.state?.()

const stream = async () => (await streamChat(gw.url, { model: 'local/slots', max_tokens: 30 })).status

describe("a llama.cpp server's slots", () => {
  it('are read from its /props, and no more requests than that are sent to it at once', async () => {
    for (let i = 0; i < 100 && facts()?.maxNumSeqs == null; i++) await sleep(20)
    expect(facts()?.maxNumSeqs).toEqual({ value: SLOTS, source: 'engine_info' })
    let most = 0
    const sampler = setInterval(() => {
      most = Math.max(most, endpoint()?.effectiveLoad?.().inflightRequests ?? 0)
    }, 2)
    const statuses = await Promise.all(Array.from({ length: 6 }, () => stream()))
    clearInterval(sampler)
    // never more than the slots at once; the next ones waited in the gateway's queue and were
    // served (a 2 s objective leaves room for a wave or two), the last refused on their
    // predicted wait, not sent to wait at the server
    expect(most).toBe(SLOTS)
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(SLOTS)
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true)
  })

  it('reads only a plausible slot count', () => {
    expect(slotsFromProps({ total_slots: 4, model_path: 'm.gguf' })).toBe(4)
    for (const bad of [{}, { total_slots: 0 }, { total_slots: 2.5 }, { total_slots: '4' }, null, []])
      expect(slotsFromProps(bad)).toBeUndefined()
  })

  it('the simulator serves /props only in the llama.cpp dialect', async () => {
    const props = await request(`${sim.replicas[0]!.url}/props`)
    expect(props.statusCode).toBe(200)
    expect(slotsFromProps(await props.body.json())).toBe(SLOTS)
    const vllm = await startSim({ replicas: 1, port: 0, profile: 'tiny', host: '127.0.0.1' })
    try {
      const res = await request(`${vllm.replicas[0]!.url}/props`)
      expect(res.statusCode).toBe(404)
      await res.body.dump()
    } finally {
      await vllm.close()
    }
  })
})
