/**
 * The prefix-affinity scorer behind the real Picker, over endpoints with the real prefix
 * index (EndpointPrefixCache), fed the real prompt hashing (prompt-blocks.ts): a pick, then
 * the prompt's blocks recorded where it went, as admission does at dispatch.
 */
import { describe, expect, it } from 'vitest'
import { scorerFor } from '../../../src/backends/backends.js'
import { BYTES_PER_BLOCK, EndpointPrefixCache } from '../../../src/backends/endpoint-prefix-cache.js'
import { Picker } from '../../../src/backends/picker.js'
import { PrefixAffinityScorer } from '../../../src/backends/prefix-affinity.js'
import { leastWaitScorer } from '../../../src/backends/scorer.js'
import { SessionTable } from '../../../src/backends/session-table.js'
import type { EffectiveLoad, EndpointScorer, EndpointView } from '../../../src/backends/types.js'
import { routingSchema } from '../../../src/config/routing.js'
import { blockGeometry, promptBlocks } from '../../../src/openai/prompt-blocks.js'
import { promptSize } from '../../../src/openai/request-fields.js'
import { TokenEstimator } from '../../../src/openai/token-estimator.js'
import { seededText } from '../../helpers/seeded-text.js'

type Message = { role: string; content: string }

const text = (n: number, seed: number) => seededText(n, seed)

const GEOMETRY = blockGeometry(16, 4)
const tokens = new TokenEstimator()

function affinity(routing: Record<string, unknown> = {}): PrefixAffinityScorer {
  return new PrefixAffinityScorer(routingSchema.parse({ scorer: 'prefix-affinity', ...routing }))
}

/** N endpoints, each with its load (set by the test) and its prefix index. */
function pool(n: number, scorer: EndpointScorer) {
  const picker = new Picker(scorer)
  const caches = Array.from({ length: n }, () => new EndpointPrefixCache(400_000))
  const load: EffectiveLoad[] = Array.from({ length: n }, () => ({
    waiting: 0,
    running: 0,
    kvUsage: 0.1,
    kvCapacityTokens: 400_000,
    inflightRequests: 0,
    inflightTokens: 0,
    fresh: true,
  }))
  const views = (): EndpointView[] =>
    caches.map((pc, i) => ({
      name: `p-${i}`,
      pool: 'p',
      effective: { ...load[i]! },
      capacity: {},
      prefixCache: pc,
    }))
  /** Picks (among those `open` lets through), records the prompt there; the endpoint's index. */
  const send = (messages: Message[], o: { session?: string; open?: (i: number) => boolean } = {}) => {
    const body = { messages }
    const size = promptSize(body)
    const promptTokens = tokens.estimate('m', size.chars, size.messages)
    const blocks = promptBlocks(body, GEOMETRY, size.chars, size.messages)
    const all = views()
    const open = all.filter((_, i) => o.open?.(i) ?? true)
    const excluded = all.filter((_, i) => !(o.open?.(i) ?? true))
    const request = { blocks, promptTokens, session: o.session }
    const chosen = picker.pick(open, promptTokens + 100, request)
    if (chosen < 0) return -1
    picker.picked(open, chosen, excluded, promptTokens + 100, request)
    const i = all.findIndex((v) => v.name === open[chosen]!.name)
    if (blocks !== undefined) {
      const hit = caches[i]!.expectedHit(blocks, promptTokens)
      caches[i]!.sent(blocks, promptTokens, hit.raw)
    }
    return i
  }
  return { picker, caches, load, views, send }
}

/** `count` conversations, each on its own system prompt, their turns interleaved. */
function conversations(count: number, seed: number): Message[][] {
  return Array.from({ length: count }, (_, c) => [{ role: 'system', content: text(4_000, seed + 1000 * c) }])
}

function nextTurn(conv: Message[], seed: number): Message[] {
  conv.push({ role: 'user', content: text(600, seed) })
  return conv
}

function answered(conv: Message[], seed: number): void {
  conv.push({ role: 'assistant', content: text(800, seed + 1) })
}

/** Runs the conversations' turns interleaved; returns, per conversation, the endpoints of its turns. */
function play(
  p: ReturnType<typeof pool>,
  convs: Message[][],
  turns: number,
  opts: (c: number, turn: number) => { session?: string; open?: (i: number) => boolean } = () => ({}),
): number[][] {
  const where: number[][] = convs.map(() => [])
  for (let turn = 0; turn < turns; turn++) {
    for (const [c, conv] of convs.entries()) {
      const seed = 7 + 100 * c + 10 * turn
      where[c]!.push(p.send(nextTurn(conv, seed), opts(c, turn)))
      answered(conv, seed)
    }
  }
  return where
}

describe('prefix-affinity scorer', () => {
  it('sends every turn of a conversation to the replica that served its first, while it has headroom', () => {
    const p = pool(4, affinity())
    const where = play(p, conversations(7, 1), 6)
    for (const turns of where) expect(new Set(turns).size).toBe(1)
    // the conversations' first turns matched nowhere: they were spread over the replicas
    expect(new Set(where.map((t) => t[0])).size).toBe(4)
    const s = p.picker.currentScorer as PrefixAffinityScorer
    expect(s.decisions.none).toBe(7) // first turns
    expect(s.decisions.affinity).toBe(7 * 5)
  })

  it('least-wait, on the same turns, scatters the conversations (what affinity is for)', () => {
    const p = pool(4, leastWaitScorer)
    const where = play(p, conversations(7, 1), 6)
    const stayed = where.filter((turns) => new Set(turns).size === 1).length
    expect(stayed).toBeLessThan(2)
  })

  it('moves a conversation off its replica once that one saturates (KV past the threshold), and counts it', () => {
    const p = pool(4, affinity({ saturation: 0.8 }))
    const convs = conversations(4, 2)
    const first = play(p, convs, 2).map((t) => t[0]!)
    const home = first[0]!
    p.load[home]!.kvUsage = 0.85 // past routing.saturation
    const moved = p.send(nextTurn(convs[0]!, 999))
    expect(moved).not.toBe(home)
    const s = p.picker.currentScorer as PrefixAffinityScorer
    expect(s.decisions.saturated).toBe(1)
    // it stays where it moved (that replica holds the longest prefix of it now), headroom back or not
    answered(convs[0]!, 999)
    p.load[home]!.kvUsage = 0.3
    expect(p.send(nextTurn(convs[0]!, 1999))).toBe(moved)
    expect(s.decisions.saturated).toBe(1)
    expect(s.overrides.kv).toBe(1)
  })

  it('moves it when admission closes its replica (no headroom), and when that replica holds far more than its share', () => {
    const p = pool(4, affinity({ max_load_ratio: 2 }))
    const convs = conversations(4, 3)
    const homes = play(p, convs, 2).map((t) => t[0]!)
    expect(new Set(homes).size).toBe(4)
    const s = p.picker.currentScorer as PrefixAffinityScorer
    // the gate: its replica is not among the candidates
    expect(p.send(nextTurn(convs[0]!, 500), { open: (i) => i !== homes[0] })).not.toBe(homes[0])
    expect(s.decisions.saturated).toBe(1)
    // bounded load: 8 in flight at its replica and 4 at each other is within twice its share
    // (8 + 1 <= ceil(2 x 21 / 4) = 11): it stays
    const home = homes[1]!
    for (const [i, l] of p.load.entries()) l.inflightRequests = i === home ? 8 : 4
    expect(p.send(nextTurn(convs[1]!, 600))).toBe(home)
    answered(convs[1]!, 600)
    expect(s.decisions.saturated).toBe(1)
    // 20 there, 1 elsewhere: 21 > ceil(2 x 24 / 4) = 12, it goes by load
    for (const [i, l] of p.load.entries()) l.inflightRequests = i === home ? 20 : 1
    expect(p.send(nextTurn(convs[1]!, 700))).not.toBe(home)
    expect(s.decisions.saturated).toBe(2)
    // why each lost its affinity: admission's gate, then its share of the load
    expect(s.overrides).toEqual({ gate: 1, load_ratio: 1, slots: 0, kv: 0 })
  })

  it('keeps affinity near idle: one request in flight at its replica (of one in the pool) is within the bound', () => {
    const p = pool(4, affinity({ max_load_ratio: 2 }))
    const convs = conversations(4, 3)
    const homes = play(p, convs, 2).map((t) => t[0]!)
    const home = homes[0]!
    const s = p.picker.currentScorer as PrefixAffinityScorer
    // ceil(2 x 2 / 4) = 1 would send it away; the bound is at least ceil(2) = 2
    for (const [i, l] of p.load.entries()) l.inflightRequests = i === home ? 1 : 0
    expect(p.send(nextTurn(convs[0]!, 500))).toBe(home)
    expect(s.overrides.load_ratio).toBe(0)
    // two there and nothing elsewhere: 3 > max(2, ceil(2 x 3 / 4)) = 2, it goes
    answered(convs[0]!, 500)
    for (const [i, l] of p.load.entries()) l.inflightRequests = i === home ? 2 : 0
    expect(p.send(nextTurn(convs[0]!, 1500))).not.toBe(home)
    expect(s.overrides.load_ratio).toBe(1)
  })

  it('weighs load against affinity: a replica with a queue loses a partial match to an idle one', () => {
    const p = pool(2, affinity({ prefix_weight: 2, load_weight: 1 }))
    const convs = conversations(1, 4)
    const home = play(p, convs, 2)[0]![0]!
    p.load[home]!.waiting = 3 // three requests queued at the server: worth more than its match
    const s = p.picker.currentScorer as PrefixAffinityScorer
    expect(p.send(nextTurn(convs[0]!, 42))).toBe(1 - home)
    expect(s.decisions.load).toBe(1)
  })

  it('session affinity: the same x-session-id goes where it went last, whatever its prompt', () => {
    const p = pool(4, affinity())
    const where = new Map<string, Set<number>>()
    for (let i = 0; i < 40; i++) {
      const session = `s-${i % 5}`
      // unrelated prompts: nothing in common but the session
      const at = p.send([{ role: 'user', content: text(800, 10_000 + i) }], { session })
      where.set(session, (where.get(session) ?? new Set()).add(at))
    }
    for (const at of where.values()) expect(at.size).toBe(1)
    const s = p.picker.currentScorer as PrefixAffinityScorer
    expect(s.decisions.session).toBe(35)
    // off: the same requests scatter
    const q = pool(4, affinity({ session_affinity: false }))
    const seen = new Set<number>()
    for (let i = 0; i < 8; i++)
      seen.add(q.send([{ role: 'user', content: text(800, 20_000 + i) }], { session: 's' }))
    expect(seen.size).toBeGreaterThan(1)
  })

  it('without the request (no blocks, no session) it orders endpoints as least-wait does', () => {
    const s = affinity()
    const p = pool(3, s)
    p.load[0]!.waiting = 2
    p.load[1]!.running = 40
    const views = p.views()
    const ranked = (sc: EndpointScorer) =>
      views
        .map((v) => ({ n: v.name, s: sc.score(v, 100) }))
        .sort((a, b) => a.s - b.s)
        .map((x) => x.n)
    expect(ranked(s)).toEqual(ranked(leastWaitScorer))
    expect(ranked(s)).toEqual(['p-2', 'p-1', 'p-0'])
  })

  it('peek answers what pick will, with no side effect', () => {
    const p = pool(4, affinity())
    const convs = conversations(4, 5)
    play(p, convs, 1)
    const body = { messages: nextTurn(convs[2]!, 77) }
    const size = promptSize(body)
    const request = {
      blocks: promptBlocks(body, GEOMETRY, size.chars, size.messages),
      promptTokens: tokens.estimate('m', size.chars, size.messages),
    }
    const views = p.views()
    const peeked = p.picker.peek(views, 1000, request)
    expect(p.picker.peek(views, 1000, request)).toBe(peeked)
    expect(p.picker.pick(views, 1000, request)).toBe(peeked)
  })

  it('is the pool scorer routing.scorer names, one per pool (its sessions are its own)', () => {
    const a = scorerFor(routingSchema.parse({ scorer: 'prefix-affinity' }))
    const b = scorerFor(routingSchema.parse({ scorer: 'prefix-affinity' }))
    expect(a).toBeInstanceOf(PrefixAffinityScorer)
    expect(a).not.toBe(b)
    expect(scorerFor(routingSchema.parse({}))).toBeInstanceOf(PrefixAffinityScorer) // the default
    expect(scorerFor(routingSchema.parse({ scorer: 'least-wait' }))).toBe(leastWaitScorer)
  })
})

describe('bounded memory', () => {
  it('the index of an endpoint stays within its KV capacity in blocks under 100,000 distinct prompts', () => {
    const kvTokens = 160_000 // 10,000 blocks of 16
    const pc = new EndpointPrefixCache(kvTokens)
    let most = 0
    const base = text(380, 1)
    // distinct from their first block on, so every block of every prompt is new (chained hashes)
    const prompt = (i: number) => ({ messages: [{ role: 'user', content: `${i} ${base}` }] })
    for (let i = 0; i < 100_000; i++) {
      const body = prompt(i)
      const size = promptSize(body)
      const blocks = promptBlocks(body, GEOMETRY, size.chars, size.messages)!
      pc.sent(blocks, tokens.estimate('m', size.chars, size.messages), 0)
      most = Math.max(most, pc.index.size)
    }
    // ~600,000 blocks sent; the index holds the most recent 10,000
    expect(most).toBe(10_000)
    expect(pc.index.capacity).toBe(10_000)
    const state = pc.state() as { indexBlocks: number; indexBytes: number }
    expect(state.indexBlocks).toBe(10_000)
    expect(state.indexBytes).toBe(10_000 * BYTES_PER_BLOCK)
    // the most recent prompt is still matched, the first long forgotten
    const again = (i: number) => {
      const body = prompt(i)
      const size = promptSize(body)
      return pc.index.match(promptBlocks(body, GEOMETRY, size.chars, size.messages)!)
    }
    expect(again(99_999)).toBeGreaterThan(0)
    expect(again(0)).toBe(0)
  })

  it('routing.index_blocks and routing.block_size override what the engine says', () => {
    const pc = new EndpointPrefixCache(160_000, { indexBlocks: 500, blockSize: 32 })
    pc.scraped({ waiting: 0, running: 0, kvCapacityTokens: 1_000_000, blockSize: 16 }, 160_000)
    expect(pc.index.capacity).toBe(500)
    expect(pc.blockSize).toBe(32)
  })

  it('the session table forgets the least recently used session past its size', () => {
    const t = new SessionTable(1_000)
    for (let i = 0; i < 100_000; i++) t.sent(`s-${i}`, `e-${i % 4}`)
    expect(t.size).toBe(1_000)
    expect(t.endpointOf('s-99999')).toBe('e-3')
    expect(t.endpointOf('s-0')).toBeUndefined()
  })
})
