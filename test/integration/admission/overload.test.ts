/**
 * Acceptance: under 3x the simulator's interactive capacity, the requests the gateway
 * admits meet the TTFT SLO, the others are refused at once with a Retry-After, and the
 * gateway stays responsive. Simulator and SLOs are time-scaled together (x SCALE).
 */
import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SimGateway, startSimGateway } from '../../helpers/sim-gateway.js'
import { sleep } from '../../helpers/upstream.js'

const SCALE = 5
/**
 * ~1,000-token prompts (simulator rule: chars/4 + 4 per message), 64 output tokens. Each
 * prompt starts differently, so the simulator's prefix cache cannot skip its prefill.
 */
let serial = 0
const prompt = () => `${String(serial++).padStart(8, '0')} ${'x'.repeat(3975)}`
/** Measured with this workload: about 30 req/s real time on one 8B/H100 replica. */
const CAPACITY_RPS = Number(process.env.CAP ?? 30) / SCALE
const RATE = 3 * CAPACITY_RPS
const DURATION_MS = 12_000

interface Outcome {
  status: number
  sentAt: number
  headersAt: number
  ttftMs?: number
  retryAfter?: string | undefined
  reason?: string | undefined
}

describe('admission under 3x overload', () => {
  let gw: SimGateway
  const agent = new Agent({ connections: 512 })
  beforeAll(async () => {
    // The prefill budget pinned at the old default (2,048 tokens). Learned from the engine's
    // step (8,192) it lets 8 of these prompts through at once, and then 24-31 of ~150
    // refusals come from the queue 1-1.9 s after arrival (82 before the estimator learned at
    // first tokens and counted a stalled queue; 25 of 140, 0.3-1 s, with the simulator on its
    // own thread): a known gap of the learned budget (issue 14, in bench:admission's "refusal
    // at arrival" row), not what this test is for.
    gw = await startSimGateway({
      scale: SCALE,
      raw: { admission: { max_prefill_tokens_per_endpoint: 2048 } },
    })
  })
  afterAll(async () => {
    await agent.close()
    await gw.close()
  })

  async function one(): Promise<Outcome> {
    const sentAt = performance.now()
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'meta-llama/Llama-3.1-8B-Instruct',
        stream: true,
        max_tokens: 64,
        ignore_eos: true,
        messages: [{ role: 'user', content: prompt() }],
      }),
    })
    const headersAt = performance.now()
    const out: Outcome = { status: res.statusCode, sentAt, headersAt }
    if (res.statusCode !== 200) {
      out.retryAfter = res.headers['retry-after'] as string | undefined
      out.reason = res.headers['x-gateway-reject-reason'] as string | undefined
      await res.body.dump()
      return out
    }
    for await (const chunk of res.body) {
      if (out.ttftMs === undefined && (chunk as Buffer).includes('"content"'))
        out.ttftMs = performance.now() - sentAt
    }
    return out
  }

  it('admitted requests meet the TTFT SLO; the rest are refused at arrival with Retry-After', async () => {
    const pending: Promise<Outcome>[] = []
    let seed = 1
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    const start = performance.now()
    let next = start
    const healthLatencies: number[] = []
    while (performance.now() - start < DURATION_MS) {
      next += (-Math.log(1 - rnd()) * 1000) / RATE // Poisson arrivals
      const wait = next - performance.now()
      if (wait > 0) await sleep(wait)
      pending.push(one())
      if (pending.length % 20 === 0) {
        const t = performance.now()
        const h = await request(`${gw.adminUrl}/healthz`, { dispatcher: agent })
        await h.body.dump()
        healthLatencies.push(performance.now() - t)
      }
    }
    const results = await Promise.all(pending)
    const ok = results.filter((r) => r.status === 200)
    const refused = results.filter((r) => r.status === 503)
    const slo = 500 * SCALE
    const met = ok.filter((r) => (r.ttftMs ?? Number.POSITIVE_INFINITY) <= slo)
    const summary = {
      offered: results.length,
      admitted: ok.length,
      refused: refused.length,
      other: results.length - ok.length - refused.length,
      attainmentOfAdmitted: met.length / ok.length,
      refusalP99Ms: percentile(
        refused.map((r) => r.headersAt - r.sentAt),
        0.99,
      ),
      lateRefusals: refused.filter((r) => r.headersAt - r.sentAt >= slo / 10).length,
      healthMaxMs: Math.max(...healthLatencies),
      reasons: count(refused.map((r) => r.reason ?? '')),
    }
    console.log(JSON.stringify(summary))
    if (process.env.DEBUG_STATE) {
      const st = await request(`${gw.adminUrl}/admin/state`, { dispatcher: agent })
      const state = (await st.body.json()) as { admission: unknown; backends: unknown }
      console.log(JSON.stringify(state.admission, null, 1), JSON.stringify(state.backends).slice(0, 3000))
      const ttfts = ok.map((r) => Math.round(r.ttftMs ?? -1))
      console.log('ttfts', JSON.stringify(ttfts))
    }
    expect(summary.other).toBe(0)
    expect(refused.length).toBeGreaterThan(results.length / 3) // it really was overloaded
    expect(ok.length).toBeGreaterThan(results.length / 6) // and it still served
    expect(summary.attainmentOfAdmitted).toBeGreaterThanOrEqual(0.95)
    for (const r of refused) {
      expect(r.reason).toBe('ttft_slo')
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1)
    }
    // Refused at arrival, not after a wait in the queue: a shed request would have waited
    // most of its objective (2.5 s here). Measured from the client, which shares two cores
    // with the gateway and the simulator, so this bounds behaviour, not speed (how fast a
    // refusal is, bench:overhead and bench:admission measure).
    // At most 15% of the refusals come later than a tenth of it: refused from the queue when
    // a new prediction puts them past the objective (early refusal), not at arrival. With the
    // simulator on a thread of its own, keeping its engine's time as a server does, 6-12 of
    // ~144 (4-8%) came 0.3-1.9 s after arrival in eight runs, and 2 since such refusals widen
    // the TTFT margin (arrival refuses more); with it in the gateway's event loop, whose turns
    // its steps waited for, none did (this bound was 3% then); before early refusal learned
    // from such requests, a quarter came late. bench:admission reports the share per level
    // ("refused from the queue before its deadline").
    expect(summary.lateRefusals / refused.length).toBeLessThanOrEqual(0.15)
    expect(summary.healthMaxMs).toBeLessThan(100)
  }, 60_000)
})

function count(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const x of xs) out[x] = (out[x] ?? 0) + 1
  return out
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0
}
