/**
 * A server that runs fewer requests at once than it is sent (a llama.cpp server's
 * `--parallel` slots; no engine exports the count, and here `capacity.max_num_seqs` is not
 * set): the requests beyond its slots wait there, and their first tokens come seconds after
 * the gateway predicted. Such waits are outliers to the TTFT estimator, which has no term for
 * them: before, a burst of six streams to a server of two slots taught its fit a fixed cost
 * of seconds, and every request after was refused as unreachable "even on an idle server",
 * for good (a refused request teaches nothing). Now they are not learned while they are the
 * exception, and the unreachable verdict is never worse than the engine's facts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AdmissionGateway, startAdmissionGateway, streamChat } from '../../helpers/admission-gateway.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream } from '../../helpers/upstream.js'

const SLOTS = 2
const STEP_MS = 40
const TOKENS = 25

let up: FakeUpstream
let gw: AdmissionGateway
const warnings: string[] = []
/** Streams holding a slot now, and the requests waiting for one. */
let running = 0
const waiting: (() => void)[] = []

beforeAll(async () => {
  up = await startUpstream(async (_req, res) => {
    if (running >= SLOTS) await new Promise<void>((r) => waiting.push(r))
    running++
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    for (let i = 0; i < TOKENS; i++) {
      await sleep(STEP_MS)
      res.write(chunkEvent(`t${i} `))
    }
    res.end('data: [DONE]\n\n')
    running--
    waiting.shift()?.()
  })
  gw = await startAdmissionGateway({
    endpoints: [up.url],
    raw: { classes: { interactive: { slo: { ttft_ms: 500, tpot_ms: 1000 } } } },
    warnings,
  })
})

afterAll(async () => {
  await gw.close()
  await up.close()
})

const stream = () => streamChat(gw.url)

describe('a server with fewer slots than the requests sent to it', () => {
  it('does not teach the estimator its slot waits: an idle server is still predicted idle', async () => {
    // a few streams one at a time: what this server's first token takes
    for (let i = 0; i < 4; i++) expect((await stream()).status).toBe(200)
    // six at once: four wait for a slot, 1-2 s
    const burst = await Promise.all(Array.from({ length: 6 }, () => stream()))
    expect(burst.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(4)
    const estimator = (gw.admission.state() as { pools: { estimator: { outliersNotLearned: number } }[] })
      .pools[0]?.estimator
    expect(estimator?.outliersNotLearned).toBeGreaterThanOrEqual(2)
    // and the log says what to set, once
    await sleep(200) // a scrape (50 ms here) runs the check
    const said = warnings.filter((w) => w.includes('capacity.max_num_seqs'))
    expect(said).toHaveLength(1)
    expect(said[0]).toContain('waited at the server for a batch slot')
    // the server is idle again: a request is admitted, predicted about one step (~40 ms here;
    // 84-280 ms when the waits were learned)
    const step = gw.backends.pools()[0]?.endpoints()[0]?.facts?.stepMs().value ?? STEP_MS
    for (let i = 0; i < 3; i++) {
      const r = await stream()
      expect(r.code ?? r.status).toBe(200)
      expect(Number(r.predicted)).toBeLessThan(2.5 * step)
    }
  })
})
