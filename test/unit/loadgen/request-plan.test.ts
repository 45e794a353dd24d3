import { describe, expect, it } from 'vitest'
import { RequestBuilder } from '../../../src/loadgen/request-builder.js'
import { RequestPlan } from '../../../src/loadgen/request-plan.js'
import type { StreamTiming } from '../../../src/loadgen/stream-client.js'
import { type Workload, workloadSchema } from '../../../src/loadgen/workload-schema.js'
import { chatPromptTokens } from '../../../src/sim/prompt-tokens.js'

const noTables = () => [] as number[]

function workload(raw: Record<string, unknown>): Workload {
  return workloadSchema.parse(raw)
}

const MIXED = workload({
  seed: 9,
  tenants: [
    { name: 'a', api_key: 'key-a', share: 3 },
    { name: 'b', api_key: 'key-b', classes: ['batch'] },
  ],
  classes: [
    {
      name: 'interactive',
      share: 0.8,
      priority: 'interactive',
      prompt_tokens: { dist: 'lognormal', median: 300, sigma: 0.5 },
      output_tokens: 50,
      shared_prefix: { tokens: 64, share: 0.5 },
    },
    {
      name: 'batch',
      share: 0.2,
      service_tier: 'flex',
      prompt_tokens: { dist: 'uniform', min: 100, max: 200 },
      output_tokens: 20,
    },
  ],
})

const take = (plan: RequestPlan, n: number) => Array.from({ length: n }, () => plan.next())

describe('the request plan', () => {
  it('the same seed plans the same requests; another rate only rescales their times', () => {
    const a = take(new RequestPlan(MIXED, noTables, 4), 200)
    const b = take(new RequestPlan(MIXED, noTables, 4), 200)
    const half = take(new RequestPlan(MIXED, noTables, 2), 200)
    expect(a).toEqual(b)
    const strip = ({ dueMs: _d, ...rest }: (typeof a)[number]) => rest
    expect(half.map(strip)).toEqual(a.map(strip))
    for (let i = 1; i < 200; i++) expect(half[i]!.dueMs).toBeCloseTo(2 * a[i]!.dueMs, 6)
    expect(take(new RequestPlan(MIXED, noTables, 4, 10), 200)).not.toEqual(a)
  })

  it('draws classes and tenants by their shares; a tenant sends only its classes', () => {
    const plan = take(new RequestPlan(MIXED, noTables, undefined), 10_000)
    const batch = plan.filter((p) => p.classIndex === 1)
    expect(batch.length / plan.length).toBeCloseTo(0.2, 1)
    expect(plan.filter((p) => p.classIndex === 0).every((p) => p.tenantIndex === 0)).toBe(true)
    expect(batch.filter((p) => p.tenantIndex === 0).length / batch.length).toBeCloseTo(0.75, 1)
    expect(plan.every((p) => p.dueMs === 0)).toBe(true)
    expect(batch.every((p) => p.promptTokens >= 100 && p.promptTokens <= 200)).toBe(true)
  })
})

function builder(w: Workload) {
  return new RequestBuilder({
    workload: w,
    model: 'm',
    pathPrefix: '/v1',
    tenantKeys: ['key-a', 'key-b'],
    runTag: 'ab12',
  })
}

/** A builder on a clock the test moves (`clock.now`, ms), and the plan it builds from. */
function clockedBuilder(w: Workload, timeScale?: number) {
  const clock = { now: 0 }
  const build = new RequestBuilder({
    workload: w,
    model: 'm',
    pathPrefix: '/v1',
    tenantKeys: [],
    runTag: 't',
    now: () => clock.now,
    ...(timeScale === undefined ? {} : { timeScale }),
  })
  return { clock, build, plan: new RequestPlan(w, noTables, 1) }
}

/** A response as the stream client records it. */
const timing = (status: number, headers: Record<string, string> = {}, error?: string) =>
  ({
    status,
    headers,
    latencyMs: 1,
    itlMs: [],
    chunks: 1,
    text: 'ok',
    ...(error === undefined ? {} : { error }),
  }) as StreamTiming

type Body = {
  model: string
  max_tokens: number
  stream: boolean
  stream_options: { include_usage: boolean }
  service_tier?: string
  messages: { role: string; content: string }[]
}
const bodyOf = (b: { request: { body: string } }) => JSON.parse(b.request.body) as Body

describe('the request builder', () => {
  it('streams with usage, sends the class as x-priority or service_tier and the tenant key', () => {
    const plan = new RequestPlan(MIXED, noTables, 4)
    const build = builder(MIXED)
    const reqs = take(plan, 50)
    const first = reqs.find((p) => p.classIndex === 0)!
    const batch = reqs.find((p) => p.classIndex === 1 && p.tenantIndex === 1)!
    const a = build.build(first)
    expect(a.request.path).toBe('/v1/chat/completions')
    expect(a.request.headers).toMatchObject({ 'x-priority': 'interactive', authorization: 'Bearer key-a' })
    const body = bodyOf(a)
    expect(body).toMatchObject({
      model: 'm',
      max_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
    })
    expect(body.service_tier).toBeUndefined()
    const b = build.build(batch)
    expect(b.request.headers['x-priority']).toBeUndefined()
    expect(b.request.headers.authorization).toBe('Bearer key-b')
    expect(bodyOf(b).service_tier).toBe('flex')
  })

  it('prompts are the length drawn (the simulator counts the same) and unique unless they share the prefix', () => {
    const build = builder(MIXED)
    const reqs = take(new RequestPlan(MIXED, noTables, 4), 300).filter((p) => p.classIndex === 0)
    const built = reqs.map((p) => ({ p, b: build.build(p) }))
    for (const { p, b } of built) {
      const content = bodyOf(b).messages[0]!.content
      expect(b.promptTokens).toBe(chatPromptTokens(content.length, 1))
      expect(Math.abs(b.promptTokens - p.promptTokens)).toBeLessThanOrEqual(1)
    }
    const heads = (shared: boolean) =>
      built
        .filter(({ p }) => p.sharedPrefix === shared)
        .map(({ b }) => bodyOf(b).messages[0]!.content.slice(0, 200))
    expect(new Set(heads(false)).size).toBe(heads(false).length)
    const sharedHeads = heads(true).map((h) => h.slice(0, 64 * 4))
    expect(sharedHeads.length).toBeGreaterThan(50)
    expect(new Set(sharedHeads).size).toBe(1)
  })

  it('a conversation grows: the next arrival sends the history, the answer included, and a new turn', () => {
    const w = workload({
      classes: [
        {
          name: 'chat',
          system_prompt_tokens: 100,
          conversation: { turns: 3 },
          prompt_tokens: 40,
          output_tokens: 10,
        },
      ],
    })
    const plan = new RequestPlan(w, noTables, 1)
    const build = builder(w)
    const answer = (text: string) =>
      ({ status: 200, headers: {}, latencyMs: 1, itlMs: [], chunks: 1, text }) as StreamTiming
    const t1 = build.build(plan.next())
    const t1b = build.build(plan.next()) // t1 not answered yet: a second conversation
    expect(t1b.conversation!.id).not.toBe(t1.conversation!.id)
    build.settle(t1, answer('first answer'))
    const t2 = build.build(plan.next())
    expect(t2.conversation!.id).toBe(t1.conversation!.id)
    const m = bodyOf(t2).messages
    expect(m.map((x) => x.role)).toEqual(['system', 'user', 'assistant', 'user'])
    expect(m[0]!.content).toBe(bodyOf(t1).messages[0]!.content)
    expect(m[2]!.content).toBe('first answer')
    expect(t2.promptTokens).toBeGreaterThan(t1.promptTokens)
    build.settle(t2, answer('second'))
    const t3 = build.build(plan.next())
    expect(bodyOf(t3).messages).toHaveLength(6)
    build.settle(t3, answer('third'))
    // three turns done: that conversation ended, and the next arrival does not continue it
    const next = build.build(plan.next())
    expect(next.conversation!.id).not.toBe(t1.conversation!.id)
  })

  it('a conversation goes on only after its user has thought: think_ms after the answer, stretched by the time scale', () => {
    const w = workload({
      classes: [
        {
          name: 'chat',
          conversation: { turns: 4, think_ms: 1_000 },
          prompt_tokens: 40,
          output_tokens: 10,
        },
      ],
    })
    const { clock, build, plan } = clockedBuilder(w, 2)
    const t1 = build.build(plan.next())
    expect(t1.thinkMs).toBe(2_000)
    build.settle(t1, timing(200))
    clock.now = 1_999 // still thinking: the next arrival starts another conversation
    const other = build.build(plan.next())
    expect(other.conversation!.id).not.toBe(t1.conversation!.id)
    clock.now = 2_000
    expect(build.build(plan.next()).conversation!.id).toBe(t1.conversation!.id)
  })

  it('a turn refused with a Retry-After goes again after it, the same turn, as often as `retries` allows', () => {
    const w = workload({
      classes: [
        {
          name: 'chat',
          system_prompt_tokens: 50,
          conversation: { turns: 3, think_ms: 1_000, retries: 1 },
          prompt_tokens: 40,
          output_tokens: { dist: 'uniform', min: 10, max: 200 },
        },
      ],
    })
    const { clock, build, plan } = clockedBuilder(w)
    const t1 = build.build(plan.next())
    build.settle(t1, timing(503, { 'retry-after-ms': '1500', 'retry-after': '2' }))
    clock.now = 1_499 // not yet: the next arrival opens another conversation
    expect(build.build(plan.next()).conversation!.id).not.toBe(t1.conversation!.id)
    clock.now = 1_500
    const again = build.build(plan.next())
    expect(again.conversation!.id).toBe(t1.conversation!.id)
    expect(again.retry).toBe(true)
    expect(again.request.body).toBe(t1.request.body) // the same turn: same messages, same max_tokens
    expect(again.maxTokens).toBe(t1.maxTokens)
    // its one retry spent: refused again, the conversation ends
    build.settle(again, timing(503, { 'retry-after': '1' }))
    clock.now = 10_000
    expect(build.build(plan.next()).conversation!.id).not.toBe(t1.conversation!.id)
  })

  it('a refusal without a Retry-After, or any other failure, ends the conversation; an answer restores its retries', () => {
    const w = workload({
      classes: [
        { name: 'chat', conversation: { turns: 5, retries: 1 }, prompt_tokens: 40, output_tokens: 10 },
      ],
    })
    const { clock, build, plan } = clockedBuilder(w)
    const ended = (t: StreamTiming) => {
      const b = build.build(plan.next())
      build.settle(b, t)
      clock.now += 1
      return build.build(plan.next()).conversation!.id !== b.conversation!.id
    }
    expect(ended(timing(503))).toBe(true) // no Retry-After
    expect(ended(timing(500, { 'retry-after': '1' }))).toBe(true) // not a refusal
    expect(ended(timing(0, {}, 'timeout'))).toBe(true)
    // answered, refused, answered, refused: each turn gets its own retry
    const first = build.build(plan.next())
    const id = first.conversation!.id
    build.settle(first, timing(200))
    for (let i = 0; i < 2; i++) {
      const b = build.build(plan.next())
      expect(b.conversation!.id).toBe(id)
      build.settle(b, timing(429, { 'retry-after-ms': '0' }))
      const r = build.build(plan.next())
      expect(r.retry).toBe(true)
      build.settle(r, timing(200))
    }
  })
})
