/**
 * Acceptance 2: with two simulator replicas, one loaded by direct traffic, requests through
 * the gateway go at least 80% to the idle one; with both idle they spread.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SimHandle } from '../../../src/sim/index.js'
import { chat, type Reply, type Stack, sims, startStack } from './stack.js'
import { until } from './wait.js'

let sim: SimHandle
let stack: Stack

beforeAll(async () => {
  sim = await sims(2)
  stack = await startStack({ endpoints: sim.replicas.map((r) => r.url), capacity: { max_num_seqs: 16 } })
  await until(() => stack.backends.ready() && stack.pool.usableCount() === 2, 3000, 'both endpoints fresh')
})

afterAll(async () => {
  await stack?.close()
  await sim?.close()
})

async function send(n: number, concurrency: number): Promise<Reply[]> {
  const replies: Reply[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++
        replies.push(await stack.chat({ maxTokens: 16 }))
      }
    }),
  )
  return replies
}

const count = (replies: Reply[], backend: string) => replies.filter((r) => r.backend === backend).length

describe('picking by load', () => {
  it('sends at least 80% of 50 requests to the idle replica when the other is loaded', async () => {
    const loaded = sim.replicas[0]!.url // p-0
    const direct = new AbortController()
    const load = Array.from({ length: 40 }, () =>
      chat(loaded, { maxTokens: 1500, ignoreEos: true, signal: direct.signal }),
    )
    try {
      await until(() => (stack.endpoint('p-0')?.load?.waiting ?? 0) >= 10, 5000, 'p-0 loaded')
      const replies = await send(50, 5)
      expect(replies.every((r) => r.status === 200)).toBe(true)
      const idle = count(replies, 'p-1')
      expect(idle / replies.length, `p-1 took ${idle} of ${replies.length}`).toBeGreaterThanOrEqual(0.8)
    } finally {
      direct.abort() // the simulator drops what its clients leave
      await Promise.all(load)
    }
  })

  it('spreads requests when both replicas are idle', async () => {
    await until(
      () => {
        const a = stack.endpoint('p-0')?.load
        return a !== undefined && a.waiting + a.running === 0
      },
      10_000,
      'p-0 idle again',
    )
    const replies = await send(50, 5)
    expect(replies.every((r) => r.status === 200)).toBe(true)
    expect(count(replies, 'p-0')).toBeGreaterThanOrEqual(15)
    expect(count(replies, 'p-1')).toBeGreaterThanOrEqual(15)
  })
})

describe('model routing', () => {
  it('lists what the pools serve and answers 404 model_not_found for anything else', async () => {
    const one = await sims(1)
    const s = await startStack({ models: ['sim/tiny'], aliases: ['tiny'], endpoints: [one.replicas[0]!.url] })
    try {
      await until(() => s.pool.usableCount() === 1, 3000, 'endpoint fresh')
      const models = (await (await fetch(`${s.gw.url}/v1/models`)).json()) as { data: { id: string }[] }
      expect(models.data.map((m) => m.id)).toEqual(['sim/tiny', 'tiny'])
      const unknown = await fetch(`${s.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(unknown.status).toBe(404)
      expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe(
        'GW_ERR_MODEL_NOT_FOUND',
      )
      const ok = await s.chat()
      expect(ok).toMatchObject({ status: 200, backend: 'p-0' })
    } finally {
      await s.close()
      await one.close()
    }
  })
})
