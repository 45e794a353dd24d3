/**
 * The KV an endpoint's requests in flight reserve counts a prompt block they share once
 * (inflight-blocks.ts), as the engine's prefix cache holds it: a second chat sharing a long
 * system prompt reserves its own part only, while both run; prompts hashed for real
 * (prompt-blocks.ts), leased through a real pool.
 */
import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { createBackends } from '../../../src/backends/index.js'
import { InFlightBlocks, STRIDE } from '../../../src/backends/inflight-blocks.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { blockGeometry, promptBlocks } from '../../../src/openai/prompt-blocks.js'
import { promptSize } from '../../../src/openai/request-fields.js'
import { seededText } from '../../helpers/seeded-text.js'

const text = (n: number, seed: number) => seededText(n, seed)

// 16-token blocks of 4 characters a token
const GEOMETRY = blockGeometry(16, 4)
/** A chat: a system prompt of `systemChars` (from `systemSeed`) and a question of its own. */
function chat(systemSeed: number, question: number, systemChars = 4_000) {
  const body = {
    messages: [
      { role: 'system', content: text(systemChars, systemSeed) },
      { role: 'user', content: text(400, question) },
    ],
  }
  const size = promptSize(body)
  const blocks = promptBlocks(body, GEOMETRY, size.chars, size.messages)
  if (blocks === undefined) throw new Error('no blocks')
  return { blocks, promptTokens: Math.round(size.chars / 4) }
}

describe('InFlightBlocks', () => {
  it('finds the leading blocks a request in flight holds, to within STRIDE, until it is released', () => {
    const held = new InFlightBlocks()
    const a = chat(1, 100)
    const b = chat(1, 200) // same system prompt (~1,000 tokens: ~62 blocks), another question
    const c = chat(2, 100) // another system prompt
    expect(held.shared(b.blocks)).toBe(0)
    held.hold(a.blocks, a.promptTokens, 16)
    const shared = held.shared(b.blocks)
    const systemBlocks = Math.floor(4_000 / 4 / 16)
    expect(shared % STRIDE).toBe(0)
    expect(shared).toBeLessThanOrEqual(systemBlocks + 1)
    expect(shared).toBeGreaterThan(systemBlocks - 2 * STRIDE)
    expect(held.shared(c.blocks)).toBe(0)
    expect(held.shared(a.blocks)).toBe(a.blocks.count - (a.blocks.count % STRIDE)) // a retry: all of it
    held.hold(b.blocks, b.promptTokens, 16)
    held.release(a.blocks)
    expect(held.shared(chat(1, 300).blocks)).toBe(shared) // b still holds the system prompt
    held.release(b.blocks)
    expect(held.shared(b.blocks)).toBe(0)
    expect(held.size).toBe(0)
  })
})

describe("an endpoint's in-flight KV", () => {
  function pool() {
    const config = configSchema.parse({
      backends: { pools: [{ name: 'p', models: ['m'], endpoints: ['http://127.0.0.1:1'], fail_open: true }] },
    })
    const backends = createBackends(config, { clock: new ManualClock(1000), registry: new Registry() })
    const p = backends.route('m')
    if (p === undefined) throw new Error('no pool')
    const inflight = () => p.views()[0]?.effective.inflightTokens ?? Number.NaN
    return { backends, p, inflight }
  }

  it('counts a system prompt shared by two requests in flight once', async () => {
    const { backends, p, inflight } = pool()
    const a = chat(1, 100, 16_000) // ~4,000-token system prompt
    const b = chat(1, 200, 16_000)
    const out = 100
    const first = p.acquire(a.promptTokens + out, undefined, a)
    expect(inflight()).toBe(a.promptTokens + out)
    const second = p.acquire(b.promptTokens + out, undefined, b)
    const added = inflight() - (a.promptTokens + out)
    // the second reserves its question, its output and at most a stride of the system prompt's blocks
    expect(added).toBeGreaterThan(out)
    expect(added).toBeLessThan(100 + out + 16 * (STRIDE + 1))
    first?.release('ok')
    second?.release('ok')
    expect(inflight()).toBe(0)
    // nothing in flight holds the system prompt now: the next one reserves all of it
    const third = p.acquire(b.promptTokens + out, undefined, b)
    expect(inflight()).toBe(b.promptTokens + out)
    third?.release('ok')
    await backends.close()
  })

  it('counts every request whole without its blocks', async () => {
    const { backends, p, inflight } = pool()
    const a = chat(1, 100, 16_000)
    const leases = [p.acquire(a.promptTokens, undefined, a), p.acquire(a.promptTokens)]
    const third = p.acquire(a.promptTokens, undefined, { promptTokens: a.promptTokens })
    expect(inflight()).toBe(3 * a.promptTokens)
    for (const l of [...leases, third]) l?.release('ok')
    await backends.close()
  })
})
