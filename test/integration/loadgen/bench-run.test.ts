/** The run loops against a fake upstream on a real socket: limits, concurrency, the drain, conversations. */
import { Pool } from 'undici'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type LoopMode, runBench } from '../../../src/loadgen/bench-run.js'
import { RequestBuilder } from '../../../src/loadgen/request-builder.js'
import { RequestPlan } from '../../../src/loadgen/request-plan.js'
import { workloadSchema } from '../../../src/loadgen/workload-schema.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream, usageEvent } from '../../helpers/upstream.js'

let up: FakeUpstream
let pool: Pool
let running = 0
let maxRunning = 0

/** Streams two chunks after `delayMs`; `hang` never ends. */
function answer(delayMs: number, hang = false): void {
  up.handler = async (_req, res) => {
    running++
    maxRunning = Math.max(maxRunning, running)
    res.on('close', () => running--)
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    await sleep(delayMs)
    res.write(chunkEvent('a'))
    if (hang) return
    res.write(chunkEvent('b'))
    res.end(`${usageEvent(5, 2)}data: [DONE]\n\n`)
  }
}

beforeAll(async () => {
  up = await startUpstream()
  pool = new Pool(up.url)
})
afterAll(async () => {
  await pool.close()
  await up.close()
})
beforeEach(() => {
  maxRunning = 0
})

function setup(raw: Record<string, unknown>, mode: LoopMode) {
  const w = workloadSchema.parse(raw)
  return {
    client: pool,
    plan: new RequestPlan(w, () => [], 'rate' in mode ? mode.rate : undefined),
    builder: new RequestBuilder({ workload: w, model: 'm', pathPrefix: '/v1', tenantKeys: [], runTag: 't' }),
    classNames: w.classes.map((c) => c.name),
    tenantNames: [],
    mode,
    drainMs: 2000,
  }
}

const CHAT = { classes: [{ name: 'c', prompt_tokens: 20, output_tokens: 2 }] }

describe('bench runs', () => {
  it('an open loop sends the number of requests asked, each once, at its due time', async () => {
    answer(5)
    const r = await runBench({ ...setup(CHAT, { rate: 200 }), requests: 25 })
    expect(r.records.map((x) => x.index)).toEqual(Array.from({ length: 25 }, (_, i) => i))
    expect(r.records.every((x) => x.status === 200 && x.error === undefined && x.outputTokens === 2)).toBe(
      true,
    )
    expect(r.sendLagMs).toHaveLength(25)
    // not before its time (a timer may fire a millisecond early)
    for (const x of r.records) expect(x.sentMs).toBeGreaterThan(x.dueMs - 2)
    expect(r.cpuMs).toBeGreaterThan(0)
  })

  it('a closed loop keeps exactly `concurrency` requests in flight', async () => {
    answer(30)
    const r = await runBench({ ...setup(CHAT, { concurrency: 3 }), requests: 12 })
    expect(r.records).toHaveLength(12)
    expect(maxRunning).toBe(3)
  })

  it('requests still running after the drain timeout are cut and recorded as aborted', async () => {
    answer(1, true)
    const r = await runBench({ ...setup(CHAT, { rate: 50 }), requests: 3, drainMs: 200 })
    expect(r.records.map((x) => x.error)).toEqual(['aborted', 'aborted', 'aborted'])
    expect(r.records.every((x) => x.ttftMs !== undefined)).toBe(true)
  })

  it("a conversation's turns are numbered from 1 and each sends the history before it", async () => {
    answer(1)
    const raw = {
      classes: [{ name: 'chat', conversation: { turns: 3 }, prompt_tokens: 30, output_tokens: 2 }],
    }
    const r = await runBench({ ...setup(raw, { concurrency: 1 }), requests: 6 })
    expect(r.records.map((x) => x.conversation)).toEqual([
      { id: 0, turn: 1 },
      { id: 0, turn: 2 },
      { id: 0, turn: 3 },
      { id: 1, turn: 1 },
      { id: 1, turn: 2 },
      { id: 1, turn: 3 },
    ])
    const sent = up.seen.slice(-6).map((s) => (JSON.parse(s.body) as { messages: unknown[] }).messages.length)
    expect(sent).toEqual([1, 3, 5, 1, 3, 5])
    expect(r.records[1]!.promptTokensSent).toBeGreaterThan(r.records[0]!.promptTokensSent)
  })
})
