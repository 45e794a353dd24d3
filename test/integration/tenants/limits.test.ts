/**
 * The limits stage through a real gateway on port 0 and a scripted upstream: rpm, tpm
 * reservation and its settle, max_concurrent, the daily budget, OpenAI's x-ratelimit-*
 * headers on 200s and 429s, the openai client retrying after retry-after-ms, a tenant
 * without limits never reaching the limiter, and exactly one settle however a request ends.
 */
import { connect } from 'node:net'
import OpenAI from 'openai'
import { request } from 'undici'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { PassThrough } from '../../../src/admission/index.js'
import type { BackendPool } from '../../../src/backends/types.js'
import { GatewayError } from '../../../src/errors.js'
import { hashKey } from '../../../src/tenants/directory.js'
import type {
  CheckRequest,
  LimitDecision,
  Limiter,
  RenewRequest,
  SettleRequest,
  SettleResult,
  TenantLimits,
  TenantUsage,
} from '../../../src/tenants/limiter.js'
import { MemoryStore } from '../../../src/tenants/memory-store.js'
import type { Ticket } from '../../../src/ticket.js'
import { readyBackends } from '../../helpers/backends.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream, usageEvent } from '../../helpers/upstream.js'

/** A memory store that records every call. */
class SpyLimiter implements Limiter {
  readonly name = 'spy'
  readonly checks: CheckRequest[] = []
  readonly settles: { req: SettleRequest; res: SettleResult }[] = []
  private readonly inner = new MemoryStore()
  check(req: CheckRequest): Promise<LimitDecision> {
    this.checks.push(req)
    return this.inner.check(req)
  }
  async settle(req: SettleRequest): Promise<SettleResult> {
    const res = await this.inner.settle(req)
    this.settles.push({ req, res })
    return res
  }
  renew(req: RenewRequest): Promise<boolean> {
    return this.inner.renew(req)
  }
  usage(tenant: string, limits: TenantLimits): Promise<TenantUsage> {
    return this.inner.usage(tenant, limits)
  }
  close(): Promise<void> {
    return this.inner.close()
  }
}

/** Admission that admits directly, or refuses every request with 503 while `refusing`. */
class ScriptedAdmission extends PassThrough {
  refusing = false
  override admit(ticket: Ticket, body: unknown, pool: BackendPool | undefined) {
    if (this.refusing) return new GatewayError('GW_ERR_QUEUE_FULL', { class: ticket.class })
    return super.admit(ticket, body, pool)
  }
}

const TENANTS = {
  rpm3: { rpm: 3 },
  tpm: { tpm: 10_000 },
  conc: { max_concurrent: 1 },
  budget: { daily_tokens: 10 },
  sdk: { rpm: 30 },
  free: {},
} as const
type TenantId = keyof typeof TENANTS
const keyOf = (id: TenantId) => `sk-${id}-limits-test-0123456789`

async function until(cond: () => boolean, ms = 3000) {
  const end = performance.now() + ms
  while (!cond()) {
    if (performance.now() > end) throw new Error('condition not met in time')
    await sleep(5)
  }
}

describe('tenant limits', () => {
  let up: FakeUpstream
  let gw: TestGateway
  let spy: SpyLimiter
  let admission: ScriptedAdmission
  /** Streams wait for this before they end; resolve it to let them finish. */
  let release: () => void = () => {}
  let held: Promise<void> = Promise.resolve()

  beforeAll(async () => {
    up = await startUpstream()
    const backends = await readyBackends([up.url])
    spy = new SpyLimiter()
    admission = new ScriptedAdmission()
    gw = await startGateway(
      backends,
      {
        auth: {},
        tenants: Object.entries(TENANTS).map(([id, limits]) => ({
          id,
          api_keys: [hashKey(keyOf(id as TenantId))],
          limits,
        })),
      },
      undefined,
      { limiter: spy, admission },
    )
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })
  beforeEach(() => {
    admission.refusing = false
    held = new Promise((resolve) => (release = resolve))
    up.handler = async (req, res, seen) => {
      if (req.url !== '/v1/chat/completions') {
        res.end('{}')
        return
      }
      const body = JSON.parse(seen.body) as { stream?: boolean }
      if (body.stream !== true) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            id: 'x',
            object: 'chat.completion',
            created: 1,
            model: 'm',
            choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
          }),
        )
        return
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(chunkEvent('a'))
      res.write(chunkEvent('b'))
      await held
      if (res.destroyed) return
      res.write(chunkEvent('', 'stop'))
      res.write(usageEvent(10, 2))
      res.end('data: [DONE]\n\n')
    }
  })

  const chat = (
    tenant: TenantId,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) =>
    request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keyOf(tenant)}`, ...headers },
      body: JSON.stringify({
        model: 'm',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        ...extra,
      }),
    })

  const settlesOf = (tenant: TenantId) => spy.settles.filter((s) => s.req.tenant === tenant)

  it('admits rpm 3 requests with x-ratelimit headers, then answers 429 with retry hints', async () => {
    const remaining: string[] = []
    for (let i = 0; i < 3; i++) {
      const res = await chat('rpm3')
      await res.body.text()
      expect(res.statusCode).toBe(200)
      expect(res.headers['x-ratelimit-limit-requests']).toBe('3')
      expect(res.headers['x-ratelimit-reset-requests']).toMatch(/^\d+(\.\d+)?s$/)
      expect(res.headers['x-ratelimit-limit-tokens']).toBeUndefined()
      remaining.push(String(res.headers['x-ratelimit-remaining-requests']))
    }
    expect(remaining).toEqual(['2', '1', '0'])
    const sent = up.seen.length
    const res = await chat('rpm3')
    const body = (await res.body.json()) as { error: { code: string; type: string } }
    expect(res.statusCode).toBe(429)
    expect(body.error).toMatchObject({ code: 'GW_ERR_RATE_LIMITED', type: 'rate_limit_error' })
    expect(res.headers['x-ratelimit-limit-requests']).toBe('3')
    expect(res.headers['x-ratelimit-remaining-requests']).toBe('0')
    expect(res.headers['x-ratelimit-reset-requests']).toMatch(/^(59(\.\d+)?s|1m0s)$/)
    expect(res.headers['x-gateway-reject-reason']).toBe('rate_limited')
    expect(res.headers['x-should-retry']).toBeUndefined()
    // one request every 20 s after the burst: the next slot, not a fixed window
    const ms = Number(res.headers['retry-after-ms'])
    expect(ms).toBeGreaterThan(19_000)
    expect(ms).toBeLessThanOrEqual(20_000)
    expect(res.headers['retry-after']).toBe('20')
    expect(up.seen.length).toBe(sent) // never sent upstream
    await until(() => settlesOf('rpm3').length === 3)
    const t = gw.tickets.find((x) => x.errorCode === 'GW_ERR_RATE_LIMITED')
    expect(t?.outcome).toBe('rejected')
  })

  it('reserves prompt + max_tokens of tpm at admission and refunds to the real usage when it ends', async () => {
    const res = await chat('tpm')
    await res.body.text()
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-ratelimit-limit-tokens']).toBe('10000')
    // the reservation: at least max_tokens (100) out of the bucket while it runs
    expect(Number(res.headers['x-ratelimit-remaining-tokens'])).toBeLessThanOrEqual(9900)
    expect(res.headers['x-ratelimit-limit-requests']).toBeUndefined()
    await until(() => settlesOf('tpm').length === 1)
    const s = settlesOf('tpm')[0]!
    expect(s.req.usedTokens).toBe(15)
    expect(s.res.settled).toBe(true)
    // 10000 - 15 used, give or take the refill (10000 a minute) while the test ran
    const left = s.res.tokens!.remaining
    expect(left).toBeGreaterThanOrEqual(9985)
    expect(left).toBeLessThanOrEqual(10_000)
  })

  it('refuses a second concurrent request while the first streams (max_concurrent 1)', async () => {
    const first = await chat('conc', { stream: true })
    expect(first.statusCode).toBe(200)
    const second = await chat('conc')
    const body = (await second.body.json()) as { error: { code: string } }
    expect(second.statusCode).toBe(429)
    expect(body.error.code).toBe('GW_ERR_RATE_LIMITED')
    expect(Number(second.headers['retry-after-ms'])).toBeGreaterThan(0)
    expect(Number(second.headers['retry-after-ms'])).toBeLessThanOrEqual(1000)
    release()
    expect(await first.body.text()).toContain('[DONE]')
    await until(() => settlesOf('conc').length === 1)
    expect(settlesOf('conc')[0]!.req.usedTokens).toBe(12) // the stream's usage chunk: 10 + 2
    const third = await chat('conc')
    await third.body.text()
    expect(third.statusCode).toBe(200)
  })

  it('answers a spent daily budget with GW_ERR_BUDGET_EXHAUSTED and x-should-retry: false', async () => {
    const first = await chat('budget')
    await first.body.text()
    expect(first.statusCode).toBe(200)
    await until(() => settlesOf('budget').length === 1)
    const res = await chat('budget')
    const body = (await res.body.json()) as { error: { code: string; type: string } }
    expect(res.statusCode).toBe(429)
    expect(body.error).toMatchObject({ code: 'GW_ERR_BUDGET_EXHAUSTED', type: 'rate_limit_error' })
    expect(res.headers['x-should-retry']).toBe('false')
    expect(res.headers['x-gateway-reject-reason']).toBe('budget_exhausted')
  })

  it('never calls the limiter for a tenant without limits', async () => {
    const checks = spy.checks.length
    const settles = spy.settles.length
    const res = await chat('free')
    await res.body.text()
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-ratelimit-limit-requests']).toBeUndefined()
    expect(res.headers['x-ratelimit-limit-tokens']).toBeUndefined()
    await sleep(20)
    expect(spy.checks.length).toBe(checks)
    expect(spy.settles.length).toBe(settles)
  })

  it('settles once, with nothing used, a request admission refuses with 503', async () => {
    admission.refusing = true
    const before = settlesOf('conc').length
    const res = await chat('conc')
    await res.body.text()
    expect(res.statusCode).toBe(503)
    await until(() => settlesOf('conc').length === before + 1)
    await sleep(50)
    const mine = settlesOf('conc').slice(before)
    expect(mine).toHaveLength(1)
    expect(mine[0]!.req.usedTokens).toBe(0)
    expect(mine[0]!.res.settled).toBe(true)
    // its concurrency slot is free again
    admission.refusing = false
    const next = await chat('conc')
    await next.body.text()
    expect(next.statusCode).toBe(200)
  })

  it('settles once when the client aborts mid-stream, freeing the slot', async () => {
    const before = settlesOf('conc').length
    const payload = JSON.stringify({ model: 'm', stream: true, max_tokens: 100, messages: [] })
    const { hostname, port } = new URL(gw.url)
    const socket = connect(Number(port), hostname)
    const received: Buffer[] = []
    socket.on('data', (c: Buffer) => received.push(c))
    socket.on('error', () => {})
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${keyOf('conc')}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
    )
    await until(() => Buffer.concat(received).toString().includes('"b"'))
    socket.destroy()
    await until(() => settlesOf('conc').length === before + 1)
    await sleep(50)
    const mine = settlesOf('conc').slice(before)
    expect(mine).toHaveLength(1)
    expect(mine[0]!.res.settled).toBe(true)
    // no usage came: the prompt estimate plus the two content chunks relayed
    const t = gw.tickets.find((x) => x.limiterLease?.id === mine[0]!.req.requestId)
    expect(t?.outcome).toBe('cancelled')
    expect(mine[0]!.req.usedTokens).toBe((t?.promptTokens ?? 0) + 2)
    release()
    const next = await chat('conc')
    await next.body.text()
    expect(next.statusCode).toBe(200)
  })

  it('counts two requests with one client x-request-id as two (its own ids)', async () => {
    const first = await chat('conc', { stream: true }, { 'x-request-id': 'same-id' })
    expect(first.statusCode).toBe(200)
    const second = await chat('conc', {}, { 'x-request-id': 'same-id' })
    await second.body.text()
    expect(second.statusCode).toBe(429)
    release()
    await first.body.text()
  })

  it('the openai client reads the 429 and retries after retry-after-ms, and the retry is admitted', async () => {
    // rpm 30: a burst of 30, then one every 2 s
    const burstStart = performance.now()
    const burst = await Promise.all(Array.from({ length: 30 }, () => chat('sdk')))
    for (const r of burst) {
      await r.body.text()
      expect(r.statusCode).toBe(200)
    }
    const before = gw.tickets.filter((t) => t.tenant === 'sdk' && t.status === 429).length
    // maxRetries 2, not 1: a client timer may fire a millisecond before the slot it was told
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: keyOf('sdk'), maxRetries: 2 })
    const out = await client.chat.completions.create({
      model: 'm',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(out.choices[0]?.message.content).toBe('hello')
    const refused = gw.tickets.filter((t) => t.tenant === 'sdk' && t.status === 429).length - before
    expect(refused).toBeGreaterThanOrEqual(1)
    // admitted in the next slot: 2 s after the burst began (the SDK's own backoff of 0.5 s,
    // then 1 s, would have tried twice before it and failed)
    expect(performance.now() - burstStart).toBeGreaterThanOrEqual(1990)
  })
})
