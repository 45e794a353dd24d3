/**
 * Acceptance 6: after 1,000 requests that end every way a request can end (ok, upstream
 * 4xx and 5xx, client abort before and during the stream, upstream timeout, connect error),
 * the in-flight ledger of every endpoint is back at exactly zero.
 */

import type { AddressInfo } from 'node:net'
import { createServer } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import type { SimHandle } from '../../../src/sim/index.js'
import type { Reply, Stack } from './stack.js'
import { sims, startStack } from './stack.js'
import { until } from './wait.js'

const started: SimHandle[] = []
let stack: Stack | undefined

afterEach(async () => {
  await stack?.close()
  await Promise.all(started.map((s) => s.close()))
  started.length = 0
  stack = undefined
})

async function refusedUrl(): Promise<string> {
  const srv = createServer()
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  const { port } = srv.address() as AddressInfo
  await new Promise((r) => srv.close(r))
  return `http://127.0.0.1:${port}`
}

describe('the in-flight ledger', () => {
  it('is at zero after 1,000 requests ending every way', async () => {
    const flaky = await sims(1, { faults: { errorRate: 0.3 } }) // 500s
    const healthy = await sims(1)
    const hanging = await sims(1, { faults: { hang: true } }) // never answers: upstream timeout
    started.push(flaky, healthy, hanging)
    const s = await startStack(
      {
        endpoints: [flaky, healthy, hanging].map((h) => h.replicas[0]!.url).concat(await refusedUrl()),
        fail_open: true, // the refusing endpoint is never fresh: take it anyway, for connect errors
        ejection: { consecutive_failures: 1_000_000 }, // keep every endpoint in rotation
      },
      { upstream: { headers_timeout_ms: 150 } },
    )
    stack = s
    s.backends.setScorer({ name: 'uniform', score: () => 0 }) // round robin over the four
    await until(
      () => s.pool.allEndpoints().filter((e) => e.isFresh()).length === 3,
      3000,
      'three endpoints scraped',
    )

    const N = 1000
    const replies: Reply[] = []
    let next = 0
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < N) {
          const i = next++
          const kind = i % 10
          const stream = i % 2 === 0
          if (kind === 0)
            replies.push(await s.chat({ stream, maxTokens: 64, ignoreEos: true, abortAfterMs: 1 + (i % 40) }))
          else if (kind === 1)
            replies.push(await s.chat({ maxTokens: 999_999 })) // upstream 400
          else replies.push(await s.chat({ stream, maxTokens: 4 }))
        }
      }),
    )
    expect(replies).toHaveLength(N)
    await s.gw.gateway.whenIdle()
    // A client that aborts within a millisecond or two may leave before its request reached the
    // proxy at all; those never took a lease. Everything that did is accounted below.
    expect(s.gw.tickets.length).toBeGreaterThan(N * 0.95)
    const outcomes = new Map<string, number>()
    for (const t of s.gw.tickets) outcomes.set(t.outcome, (outcomes.get(t.outcome) ?? 0) + 1)
    const statuses = new Set(replies.map((r) => r.status))
    // every way of ending happened
    expect([...outcomes.keys()].sort()).toEqual(['cancelled', 'failed', 'ok', 'upstream_error'])
    for (const status of [0, 200, 400, 500, 502, 504]) expect(statuses, `status ${status}`).toContain(status)

    for (const ep of s.pool.allEndpoints()) {
      const snap = ep.snapshot() as { ledger: Record<string, number> }
      expect(snap.ledger, ep.name).toMatchObject({ requests: 0, tokens: 0, newRequests: 0, newTokens: 0 })
      expect(ep.inflight).toBe(0)
    }
  })
})
