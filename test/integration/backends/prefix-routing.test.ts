/**
 * Prefix-aware routing through the real gateway in front of four simulated replicas (prefix
 * caching on, as vLLM V1): each conversation's turns go back to the replica that holds its
 * history, the engines' own counters show the hits, a session header pins unrelated prompts,
 * and /admin/state and /metrics show the index and the routing decisions.
 */
import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BYTES_PER_BLOCK } from '../../../src/backends/endpoint-prefix-cache.js'
import { seededText } from '../../helpers/seeded-text.js'
import { type SimGateway, startSimGateway } from '../../helpers/sim-gateway.js'

const SCALE = 3
const MODEL = 'meta-llama/Llama-3.1-8B-Instruct'

type Message = { role: string; content: string }

const text = (n: number, seed: number) => seededText(n, seed)

let gw: SimGateway
let agent: Agent

beforeAll(async () => {
  gw = await startSimGateway({
    scale: SCALE,
    replicas: 4,
    raw: {
      backends: { pools: [{ name: 'sim', models: ['*'], routing: { scorer: 'prefix-affinity' } }] },
      classes: { interactive: { slo: { ttft_ms: 2_000 * SCALE, tpot_ms: 200 * SCALE } } },
    },
  })
  agent = new Agent({ connections: 4 })
}, 60_000)

afterAll(async () => {
  await agent?.close()
  await gw?.close()
})

async function chat(messages: Message[], headers: Record<string, string> = {}) {
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: MODEL, max_tokens: 4, ignore_eos: true, messages }),
  })
  const body = (await res.body.json()) as { choices?: { message?: { content?: string } }[] }
  return {
    status: res.statusCode,
    backend: String(res.headers['x-gateway-backend']),
    answer: body.choices?.[0]?.message?.content ?? '',
  }
}

async function metric(name: string, label: string): Promise<Record<string, number>> {
  const res = await request(`${gw.adminUrl}/metrics`)
  const out: Record<string, number> = {}
  const re = new RegExp(`^${name}\\{[^}]*${label}="([^"]+)"[^}]*\\} (\\S+)`)
  for (const line of (await res.body.text()).split('\n')) {
    const m = re.exec(line)
    if (m !== null) out[m[1]!] = Number(m[2])
  }
  return out
}

describe('prefix-affinity routing: gateway and four simulated replicas', () => {
  it('sends each conversation back to the replica that holds it; the engines hit', async () => {
    const convs: Message[][] = Array.from({ length: 5 }, (_, c) => [
      { role: 'system', content: text(6_000, 1 + 1000 * c) },
    ])
    const where: string[][] = convs.map(() => [])
    for (let turn = 0; turn < 4; turn++) {
      for (const [c, conv] of convs.entries()) {
        conv.push({ role: 'user', content: text(800, 7 + 100 * c + turn) })
        const r = await chat(conv)
        expect(r.status).toBe(200)
        where[c]!.push(r.backend)
        conv.push({ role: 'assistant', content: r.answer })
      }
    }
    for (const turns of where) expect(new Set(turns).size).toBe(1)
    // the first turns matched nowhere: they were spread
    expect(new Set(where.map((t) => t[0])).size).toBeGreaterThan(1)
    const decisions = await metric('slo_gateway_prefix_routing_total', 'decision')
    expect(decisions.affinity).toBe(15)
    expect(decisions.none).toBe(5)
    // the engines served the histories from their caches: hits on every replica that served
    await new Promise((r) => setTimeout(r, 500 * SCALE)) // a scrape after the last request
    const hits = await metric('slo_gateway_backend_prefix_cache_hits_total', 'backend')
    const queries = await metric('slo_gateway_backend_prefix_cache_queries_total', 'backend')
    const total = (m: Record<string, number>) => Object.values(m).reduce((a, b) => a + b, 0)
    expect(total(hits) / total(queries)).toBeGreaterThan(0.6)
    const predicted = await metric('slo_gateway_prefix_predicted_hit_ratio', 'pool')
    expect(predicted.sim).toBeGreaterThan(0.5)
  }, 120_000)

  it('pins a session (x-session-id) to one replica whatever its prompts, and /admin/state shows it', async () => {
    const seen = new Map<string, Set<string>>()
    for (let i = 0; i < 9; i++) {
      const session = `user-${i % 3}`
      const r = await chat([{ role: 'user', content: text(600, 50_000 + i) }], { 'x-session-id': session })
      expect(r.status).toBe(200)
      seen.set(session, (seen.get(session) ?? new Set()).add(r.backend))
    }
    for (const at of seen.values()) expect(at.size).toBe(1)
    const res = await request(`${gw.adminUrl}/admin/state`)
    const state = (await res.body.json()) as {
      backends: {
        pools: {
          scorer: string
          routing: { decisions: Record<string, number>; sessions: number }
          endpoints: { prefixCache: { indexBlocks: number; indexBytes: number; capacityBlocks: number } }[]
        }[]
      }
    }
    const pool = state.backends.pools[0]!
    expect(pool.scorer).toBe('prefix-affinity')
    expect(pool.routing.sessions).toBe(3)
    expect(pool.routing.decisions.session).toBe(6)
    for (const ep of pool.endpoints) {
      expect(ep.prefixCache.indexBlocks).toBeLessThanOrEqual(ep.prefixCache.capacityBlocks)
      expect(ep.prefixCache.indexBytes).toBe(ep.prefixCache.indexBlocks * BYTES_PER_BLOCK)
    }
    expect(pool.endpoints.reduce((n, ep) => n + ep.prefixCache.indexBlocks, 0)).toBeGreaterThan(500)
  }, 120_000)
})
