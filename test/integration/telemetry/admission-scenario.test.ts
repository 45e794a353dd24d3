/**
 * Telemetry through the gateway WITH admission, in front of two `tiny` simulators (pool
 * `big` serves sim/big, pool `small` serves sim/small): a deterministic scenario with
 * requests that are good, forced slow, refused (ttft_unreachable, ttft_slo, queue_full, queue_timeout),
 * degraded (max_tokens capped and sent to the fallback model), cancelled while queued and
 * cancelled mid-stream, invalid and failed upstream. Every counter and histogram count on
 * /metrics must then equal the expected number exactly, and `promtool check metrics` must
 * pass on the text.
 *
 * Determinism comes from margins, not timing luck:
 * - Phase 1 runs while no request has finished on pool `big`, so its TTFT estimator still
 *   has its priors (α = 15 ms, β = 4 ms per prompt token, γ ≥ 0), and every prediction
 *   there is at least 15 ms: class `instant` (TTFT SLO 5 ms) is always refused, with
 *   ttft_unreachable (even an idle server is predicted slower than its objective). Then a 604-token streamed batch request X goes to `big` with its simulator
 *   slowed 400x: its prefill takes ≥ 4.2 s, and meanwhile the gateway counts its 604
 *   prompt tokens as prefill in flight. So `big` predicts ≥ 15 + 4 x 612 ms, far over the
 *   900 ms budget of classes `fallback` and `capped` (`fallback` is sent to `small`,
 *   idle: ≤ 50 ms; `capped` has no fallback and is refused), and the prefill budget of
 *   512 tokens per endpoint blocks `big` for every other request, which therefore
 *   queues (queue_limit 1: the second is refused; a 300 ms queue wait is shed). The last
 *   of these steps ends ~0.5 s after X started, over 3 s before X's first token, which is
 *   checked before and after (X still prefilling). X is cancelled right after its first
 *   content chunk; the next comes ≥ 0.9 s later, so exactly one chunk was relayed.
 * - Phase 2, the simulators idle again: good requests take milliseconds against a 1 s
 *   TTFT and 200 ms TPOT SLO. X's 4.2 s TTFT has taught `big`'s estimator β ≈ 7 ms per
 *   token, so an 8-token request is predicted at ~70 ms (then ~10 ms), far under 900 ms. Forced slow: `big` slowed 600x, one engine step ≥ 1.2 s, so
 *   the slow interactive request's TTFT ≥ 1.2 s (> 1 s) and TPOT ≈ 1.2 s (> 0.2 s), and the
 *   slow `bulk` request (no TTFT objective, so never refused for it) runs ≥ 3 steps > 2 s.
 *   Requests are sent one at a time (or after the previous one is known to run), so no
 *   decision depends on a scrape landing between two requests.
 * Prompts are 16 characters (8 tokens by the simulator's rule and by the gateway's initial
 * 4 characters per token), or 2400 for X (604 tokens; a multiple of 4, so the learned
 * ratio stays 4): the gateway's estimates equal the servers' counts.
 */
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import { METRICS } from '../../../src/telemetry/index.js'
import {
  parseText,
  promtoolCheck,
  type Reply,
  type Stack,
  settle,
  startStack,
  sum,
  sumBy,
  until,
} from './admission-stack.js'

const BIG = 'sim/big'
const SMALL = 'sim/small'
/** 16 characters: 4 + 4 (one message) = 8 prompt tokens. */
const PROMPT = 'hello admission!'
/** 2400 characters: 600 + 4 = 604 prompt tokens. */
const LONG_PROMPT = 'x'.repeat(2400)

/** Classes refused when their predicted TTFT is over the SLO, and classes that wait instead. */
const refusing = (c: object) => ({ priority: 0, max_kv_usage: 0.8, reject_on_ttft: true, ...c })
const waiting = (c: object) => ({ priority: 1, max_kv_usage: 0.8, reject_on_ttft: false, ...c })
const classes = {
  interactive: { slo: { ttft_ms: 1_000, tpot_ms: 200 }, degrade: [] },
  instant: refusing({ slo: { ttft_ms: 5 } }),
  fallback: refusing({
    slo: { ttft_ms: 1_000, tpot_ms: 200 },
    degrade: [
      { action: 'cap_max_tokens', max_tokens: 4 },
      { action: 'fallback_model', model: SMALL },
    ],
  }),
  capped: refusing({ slo: { ttft_ms: 1_000 }, degrade: [{ action: 'cap_max_tokens', max_tokens: 4 }] }),
  limited: waiting({ slo: { e2e_ms: 600_000 }, queue_limit: 1, max_queue_wait_ms: 60_000 }),
  shed: waiting({ slo: { e2e_ms: 600_000 }, max_queue_wait_ms: 300 }),
  bulk: waiting({ slo: { e2e_ms: 2_000 } }),
}

describe('telemetry through the gateway with admission', () => {
  let s: Stack

  beforeAll(async () => {
    s = await startStack({
      pools: [
        { name: 'big', model: BIG },
        { name: 'small', model: SMALL },
      ],
      raw: {
        classes,
        admission: {
          max_prefill_tokens_per_endpoint: 512,
          estimator: { step_ms: 15, prefill_tokens_per_s: 250 },
        },
      },
    })
  })

  afterAll(async () => {
    await s?.close()
  })

  const body = (extra: Record<string, unknown>) => ({
    model: BIG,
    messages: [{ role: 'user', content: PROMPT }],
    ...extra,
  })
  const chat = (cls: string | undefined, extra: Record<string, unknown>) => s.chat(cls, body(extra))
  /** Status and reason of a refusal, and that it says when to retry. */
  const refused = (r: Reply) => [
    r.status,
    r.headers['x-gateway-reject-reason'],
    typeof r.headers['retry-after'],
  ]
  const depth = (cls: string) =>
    [...s.admission.queueDepths()].find((d) => d.class === cls && d.pool === 'big')?.queued ?? -1
  const prefillingOnBig = () => {
    const st = s.admission.state() as { pools: { pool: string; prefillingTokens: Record<string, number> }[] }
    return st.pools.find((p) => p.pool === 'big')?.prefillingTokens['big-0'] ?? 0
  }

  it('counts every outcome exactly', async () => {
    onTestFailed(() => console.log(s.requestLog.join('\n')))
    const big = s.sims[0]!
    const fast = { max_tokens: 8, ignore_eos: true }

    // ---- Phase 1: nothing has finished on `big`; its estimator has its priors.
    // 2 refused for TTFT: even idle, the prediction (≥ α = 15 ms) is over the 5 ms objective,
    // so no wait helps (ttft_unreachable, no Retry-After, x-should-retry: false).
    for (let i = 0; i < 2; i++) {
      const r = await chat('instant', fast)
      expect(refused(r)).toEqual([503, 'ttft_unreachable', 'undefined'])
      expect(r.headers['x-should-retry']).toBe('false')
    }

    // X: a long batch prompt on a slowed `big` (prefill ≥ 4.2 s), dispatched at once. (The
    // client sees the response headers only with the first token: the gateway sends them
    // with the first body bytes.)
    await s.faults(0, { slowdown: 400 })
    const xAbort = new AbortController()
    const xDone = s
      .send(
        'batch',
        body({
          stream: true,
          max_tokens: 16,
          ignore_eos: true,
          messages: [{ role: 'user', content: LONG_PROMPT }],
        }),
        xAbort.signal,
      )
      .then(
        async (x) => {
          // Cancelled mid-stream: right after its first content chunk.
          try {
            for await (const chunk of x.body) if (String(chunk).includes('"content"')) xAbort.abort()
          } catch {
            // the abort
          }
          return x.statusCode
        },
        () => 0,
      )
    await until(() => prefillingOnBig() === 604, 5_000, 'X dispatched to big')

    // 2 degraded: over budget on `big` on TTFT alone, so cap_max_tokens (which cannot help
    // TTFT) is skipped and the request falls back to sim/small on the idle pool `small`,
    // where it is good.
    for (let i = 0; i < 2; i++) {
      const r = await chat('fallback', { ...fast, stream: true })
      expect(r.status).toBe(200)
      expect(r.headers['x-gateway-degraded']).toBe('fallback_model')
      expect(r.headers['x-gateway-model']).toBe(SMALL)
      expect(r.headers['x-gateway-backend']).toBe('small-0')
      expect(Number(r.headers['x-gateway-predicted-ttft-ms'])).toBeLessThan(900)
      expect(r.text).toContain(`"model":"${SMALL}"`)
      expect(r.text.match(/"content":/g)).toHaveLength(8)
    }
    // 1 refused for TTFT: its ladder (cap_max_tokens) cannot help TTFT: not counted as degraded.
    expect(refused(await chat('capped', fast))).toEqual([503, 'ttft_slo', 'string'])

    // Queued: `big` is blocked (X's 604 prompt tokens fill the 512-token prefill budget).
    const q1Abort = new AbortController()
    const q1 = s.send('limited', body(fast), q1Abort.signal).then(
      (r) => r.statusCode,
      () => 0,
    )
    await until(() => depth('limited') === 1, 5_000, 'the limited request queued')
    // queue_limit 1: the next one is refused at once.
    const full = await chat('limited', fast)
    expect(refused(full)).toEqual([503, 'queue_full', 'string'])
    expect(full.headers['x-gateway-queue-ms']).toBeUndefined() // refused on arrival
    // Shed after its 300 ms maximum queue wait, which it is told.
    const shed = await chat('shed', fast)
    expect(refused(shed)).toEqual([503, 'queue_timeout', 'string'])
    expect(Number(shed.headers['x-gateway-queue-ms'])).toBeGreaterThanOrEqual(300)
    // Cancelled while queued.
    expect(prefillingOnBig()).toBe(604)
    q1Abort.abort()
    expect(await q1).toBe(0)
    await until(() => depth('limited') === 0, 5_000, 'the cancelled request out of the queue')
    // Still before X's first token, so nothing could have been dispatched to `big` since.
    expect(prefillingOnBig()).toBe(604)

    expect(await xDone).toBe(200)
    await until(() => s.gateway.pipeline.inFlight === 0, 10_000, 'no request in flight')
    await s.faults(0, {})
    await settle(s)

    // ---- Phase 2.
    // 1 invalid: an unknown class.
    expect((await chat('urgent', fast)).status).toBe(400)
    // 2 upstream errors (503 from the model server).
    await s.faults(0, { errorRate: 1, errorStatus: 503 })
    for (let i = 0; i < 2; i++) expect((await chat(undefined, fast)).status).toBe(503)
    await s.faults(0, {})
    await settle(s)
    // 6 good: 4 streamed, 2 not, one at a time.
    for (let i = 0; i < 4; i++) {
      const r = await chat(undefined, { ...fast, stream: true })
      expect([r.status, r.headers['x-gateway-class'], r.headers['x-gateway-degraded']]).toEqual([
        200,
        'interactive',
        undefined,
      ])
    }
    for (let i = 0; i < 2; i++) expect((await chat(undefined, fast)).status).toBe(200)
    await settle(s)
    // 2 forced slow: one engine step ≥ 1.2 s. The bulk request goes once the interactive one
    // runs in the simulator and a scrape has seen it running.
    await s.faults(0, { slowdown: 600 })
    const slowInteractive = chat(undefined, { max_tokens: 3, ignore_eos: true, stream: true })
    await until(() => big.replicas[0]!.engine.numRunning === 1, 5_000, 'the slow request running')
    const since = performance.now()
    const endpoint = s.backends.pools()[0]!.endpoints()[0]!
    await until(() => (endpoint.loadAt ?? 0) > since, 5_000, 'a scrape of the busy endpoint')
    const slowBulk = chat('bulk', { max_tokens: 3, ignore_eos: true, stream: true })
    expect((await slowInteractive).status).toBe(200)
    expect((await slowBulk).status).toBe(200)
    await s.faults(0, {})

    await until(() => s.gateway.pipeline.inFlight === 0, 10_000, 'no request in flight')
    const res = await request(`${s.adminUrl}/metrics`, { dispatcher: s.client })
    const text = await res.body.text()
    const m = parseText(text)

    expect(sumBy(m, METRICS.requests, ['class', 'outcome'])).toEqual({
      'instant/rejected': 2,
      'batch/cancelled': 1, // X, mid-stream
      'fallback/ok': 2,
      'capped/rejected': 1,
      'limited/cancelled': 1, // queued
      'limited/rejected': 1, // queue_full
      'shed/rejected': 1, // queue_timeout
      'interactive/invalid': 1, // unknown class: labelled with the default class
      'interactive/upstream_error': 2,
      'interactive/ok': 7, // 6 good + 1 slow
      'bulk/ok': 1,
    })
    // The model label is the model the client asked for, also after a fallback.
    expect(sumBy(m, METRICS.requests, ['model', 'tenant'])).toEqual({ [`${BIG}/default`]: 20 })
    expect(sumBy(m, METRICS.rejected, ['class', 'reason'])).toEqual({
      'instant/ttft_unreachable': 2,
      'capped/ttft_slo': 1,
      'limited/queue_full': 1,
      'shed/queue_timeout': 1,
    })
    expect(sumBy(m, METRICS.degraded, ['class', 'action'])).toEqual({
      'fallback/fallback_model': 2,
    })
    expect(sumBy(m, METRICS.degradedRequests, ['class'])).toEqual({ fallback: 2 })
    expect(sumBy(m, METRICS.goodRequests, ['class'])).toEqual({ fallback: 2, interactive: 6 })
    // Output tokens of good requests: 2 x 8 (fallen back, not capped) + 6 x 8.
    expect(sumBy(m, METRICS.goodTokens, ['class'])).toEqual({ fallback: 16, interactive: 48 })
    expect(sumBy(m, METRICS.sloMissed, ['class', 'slo'])).toEqual({
      'interactive/ttft': 1,
      'interactive/tpot': 1,
      'bulk/e2e': 1,
    })
    expect(sumBy(m, METRICS.errors, ['class', 'kind'])).toEqual({ 'interactive/upstream_5xx': 2 })
    // Prompt tokens of every request the server accepted (the server's count, else the
    // gateway's estimate, equal here): X 604; 2 fallback, 6 good, 2 slow x 8 (the 2 the
    // server refused with 503 processed none).
    // Completion: X 1 chunk relayed; 2 x 8 + 6 x 8 + 2 x 3.
    expect(sumBy(m, METRICS.tokens, ['class', 'kind'])).toEqual({
      'batch/prompt': 604,
      'batch/completion': 1,
      'fallback/prompt': 16,
      'fallback/completion': 16,
      'interactive/prompt': 56,
      'interactive/completion': 51,
      'bulk/prompt': 8,
      'bulk/completion': 3,
    })
    // Latency histograms: successful requests only; TTFT/TPOT/ITL streamed ones
    // (2 fallback + 4 good + 2 slow), E2E all 10.
    expect(sumBy(m, `${METRICS.ttft}_count`, ['class'])).toEqual({ fallback: 2, interactive: 5, bulk: 1 })
    expect(sum(m, `${METRICS.ttft}_bucket`, { le: '1' })).toBe(6)
    expect(sumBy(m, `${METRICS.tpot}_count`, ['class'])).toEqual({ fallback: 2, interactive: 5, bulk: 1 })
    expect(sum(m, `${METRICS.tpot}_bucket`, { le: '0.2' })).toBe(6)
    expect(sumBy(m, `${METRICS.e2e}_count`, ['class'])).toEqual({ fallback: 2, interactive: 7, bulk: 1 })
    expect(sum(m, `${METRICS.e2e}_bucket`, { le: '2' })).toBe(8)
    expect(sum(m, `${METRICS.itl}_count`)).toBe(2 * 7 + 4 * 7 + 2 * 2)
    expect(sum(m, `${METRICS.predictionError}_count`)).toBe(8)
    // Queue wait: every dispatched request (X, 2 fallback, 2 errors, 6 good, 2 slow), and
    // the one shed after waiting; not the cancelled-while-queued or refused ones.
    expect(sumBy(m, `${METRICS.queueWait}_count`, ['class'])).toEqual({
      batch: 1,
      fallback: 2,
      interactive: 9,
      bulk: 1,
      shed: 1,
    })
    expect(sum(m, `${METRICS.queueWait}_bucket`, { class: 'shed', le: '0.25' })).toBe(0)
    expect(sum(m, METRICS.queueDepth)).toBe(0)
    expect(sum(m, METRICS.inflight)).toBe(0)
    expect(sum(m, METRICS.httpRequests)).toBe(20)

    const check = promtoolCheck(text)
    if (check !== undefined) {
      expect(check.output).toBe('')
      expect(check.status).toBe(0)
    }
  }, 60_000)
})
