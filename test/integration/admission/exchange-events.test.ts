/**
 * The exchange's events, end to end, with admission on: 1,000 requests end at random
 * moments and in every way (done, upstream error, upstream reset mid-stream, upstream
 * timeout, client gone while queued and mid-stream, refused, shed from the queue). An
 * observer registered with the gateway counts every event of every exchange: each
 * once-event fires at most once (`ended` exactly once), `prefilled` exactly for the
 * requests that were sent, and afterwards the ledger, the queues, the prefill budget
 * and the in-flight counts are all back at zero.
 */
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import type { ExchangeObserver } from '../../../src/exchange.js'
import type { Ticket } from '../../../src/ticket.js'
import { type AdmissionGateway, startAdmissionGateway } from '../../helpers/admission-gateway.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream, usageEvent } from '../../helpers/upstream.js'
import { until } from '../backends/wait.js'

interface Counts {
  dispatched: number
  responseStarted: number
  firstToken: number
  tokenGaps: number
  prefilled: number
  ended: number
}

class CountingObserver implements ExchangeObserver {
  readonly seen = new Map<Ticket, Counts>()
  private of(t: Ticket): Counts {
    let c = this.seen.get(t)
    if (c === undefined) {
      c = { dispatched: 0, responseStarted: 0, firstToken: 0, tokenGaps: 0, prefilled: 0, ended: 0 }
      this.seen.set(t, c)
    }
    return c
  }
  dispatched(t: Ticket) {
    this.of(t).dispatched++
  }
  responseStarted(t: Ticket) {
    this.of(t).responseStarted++
  }
  firstToken(t: Ticket) {
    this.of(t).firstToken++
  }
  tokenGap(t: Ticket) {
    this.of(t).tokenGaps++
  }
  prefilled(t: Ticket) {
    this.of(t).prefilled++
  }
  ended(t: Ticket) {
    this.of(t).ended++
  }
}

/** A seeded generator (tests must be repeatable). */
function rng(seed: number): () => number {
  let s = seed
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31
    return s / 2 ** 31
  }
}

type Mode = 'done' | 'error' | 'reset' | 'hang'

/** The upstream does what the request's `user` field says, after a short random delay. */
function behave(up: FakeUpstream): void {
  up.handler = async (_req, res, seen) => {
    const body = JSON.parse(seen.body) as { user: string; stream?: boolean }
    const [mode, delay] = body.user.split(':') as [Mode, string]
    await sleep(Number(delay))
    if (res.destroyed) return
    if (mode === 'hang') return // never answers: the gateway's headers timeout
    if (mode === 'error') {
      res.writeHead(500, { 'content-type': 'application/json' })
      res.end('{"error":{"message":"boom"}}')
      return
    }
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          choices: [{ finish_reason: 'stop' }],
          usage: { prompt_tokens: 9, completion_tokens: 3 },
        }),
      )
      return
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    for (let i = 0; i < 10; i++) {
      if (res.destroyed) return
      if (mode === 'reset' && i === 3) {
        res.socket?.destroy()
        return
      }
      res.write(chunkEvent(`t${i}`))
      await sleep(3 + (i % 3))
    }
    res.write(usageEvent(9, 6))
    res.end('data: [DONE]\n\n')
  }
}

let up: FakeUpstream | undefined
let gw: AdmissionGateway | undefined

afterEach(async () => {
  await gw?.close()
  await up?.close()
})

describe('exchange events', () => {
  it('fire once each, for 1,000 requests ending every way, and leave every count at zero', async () => {
    up = await startUpstream()
    behave(up)
    const counter = new CountingObserver()
    gw = await startAdmissionGateway({
      endpoints: [up.url],
      pool: { ejection: { consecutive_failures: 1_000_000 } }, // keep the endpoint in rotation through the 5xx
      // four requests at the endpoint at most: the rest queue in the gateway
      raw: { upstream: { headers_timeout_ms: 250 }, admission: { max_inflight_per_endpoint: 4 } },
      observers: [counter],
    })
    const { apps, admission, backends } = gw
    const url = `${gw.url}/v1/chat/completions`
    expect(backends.ready()).toBe(true)

    const random = rng(7)
    const agent = new Agent({ connections: 64 })
    const N = 1000
    const statuses = new Map<number, number>()
    let next = 0
    const one = async () => {
      const mode: Mode = (['done', 'done', 'done', 'error', 'reset', 'hang'] as const)[
        Math.floor(random() * 6)
      ]!
      const stream = random() < 0.8
      const cls = random() < 0.3 ? 'batch' : 'interactive'
      // about a third of the clients give up at a random moment: queued, waiting, or mid-stream
      const abortAfter = random() < 0.35 ? Math.floor(random() * 120) : undefined
      const controller = new AbortController()
      const timer = abortAfter === undefined ? undefined : setTimeout(() => controller.abort(), abortAfter)
      try {
        const res = await request(url, {
          method: 'POST',
          dispatcher: agent,
          signal: controller.signal,
          headers: { 'content-type': 'application/json', 'x-priority': cls },
          body: JSON.stringify({
            model: 'm',
            stream,
            max_tokens: 8,
            user: `${mode}:${Math.floor(random() * 30)}`,
            messages: [{ role: 'user', content: 'x'.repeat(20 + Math.floor(random() * 200)) }],
          }),
        })
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        await res.body.text()
      } catch {
        statuses.set(0, (statuses.get(0) ?? 0) + 1) // aborted, or the stream broke
      } finally {
        clearTimeout(timer)
      }
    }
    await Promise.all(
      Array.from({ length: 48 }, async () => {
        while (next++ < N) await one()
      }),
    )
    await agent.close()
    await until(() => apps.pipeline.inFlight === 0, 10_000, 'no request in flight')

    // every request that reached the gateway was seen ending, exactly once
    const tickets = [...counter.seen.keys()]
    expect(tickets.length).toBeGreaterThan(N * 0.95)
    for (const [t, c] of counter.seen) {
      const where = `${t.outcome} ${t.errorCode ?? ''} ${JSON.stringify(c)}`
      expect(c.ended, where).toBe(1)
      expect(c.dispatched, where).toBeLessThanOrEqual(1)
      expect(c.responseStarted, where).toBeLessThanOrEqual(c.dispatched)
      expect(c.firstToken, where).toBeLessThanOrEqual(c.responseStarted)
      expect(c.prefilled, where).toBe(c.dispatched)
      expect(c.tokenGaps, where).toBe(Math.max(0, t.contentChunks - 1))
      expect(t.outcome, where).not.toBe('pending')
    }
    // and every way of ending happened
    const has = (f: (t: Ticket) => boolean, what: string) => expect(tickets.some(f), what).toBe(true)
    has((t) => t.outcome === 'ok' && t.stream, 'streamed, done')
    has((t) => t.outcome === 'ok' && !t.stream, 'not streamed, done')
    has((t) => t.outcome === 'upstream_error', 'upstream 500')
    has((t) => t.errorCode === 'GW_ERR_UPSTREAM_STREAM_FAILED', 'upstream reset mid-stream')
    has((t) => t.errorCode === 'GW_ERR_UPSTREAM_TIMEOUT', 'upstream timeout')
    has((t) => t.outcome === 'cancelled' && t.dispatchedAt === undefined, 'client gone while queued')
    has((t) => t.outcome === 'cancelled' && t.firstTokenAt !== undefined, 'client gone mid-stream')
    has((t) => t.outcome === 'rejected', 'refused or shed by admission')

    // nothing left behind: queues, in-flight per class, prefill budget, the endpoint's ledger
    for (const q of admission.queueDepths())
      expect(q, `${q.pool}/${q.class}`).toMatchObject({ queued: 0, inflight: 0 })
    const state = admission.state() as { pools: { prefillingTokens: Record<string, number> }[] }
    for (const p of state.pools) for (const v of Object.values(p.prefillingTokens)) expect(v).toBe(0)
    for (const ep of backends.pools().flatMap((p) => p.allEndpoints())) {
      expect(ep.inflight, ep.name).toBe(0)
      expect(ep.inflightTokens, ep.name).toBe(0)
    }
  }, 90_000)
})
