/**
 * Acceptance 4: metrics frozen by fault injection are detected as stale within the
 * staleness limit, and the endpoint is then treated as saturated (no requests).
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { SimHandle } from '../../../src/sim/index.js'
import { fault, type Stack, sims, startStack, traffic } from './stack.js'
import { sleep, until } from './wait.js'

let sim: SimHandle | undefined
let stack: Stack | undefined

afterEach(async () => {
  await stack?.close()
  await sim?.close()
  sim = stack = undefined
})

describe('frozen metrics', () => {
  it('are stale within stale_after_ms (+ one scrape interval) and the endpoint gets no more requests', async () => {
    sim = await sims(2)
    const [r0, r1] = sim.replicas
    // the defaults the issue names: scrape every 100 ms, stale after 1 s
    const s = await startStack({ endpoints: [r0!.url, r1!.url] })
    stack = s
    await until(() => s.pool.usableCount() === 2, 3000, 'both endpoints fresh')
    // requests that span several scrapes (~0.8 s each on the tiny profile), as LLM requests do
    const load = traffic(s, 4, { maxTokens: 300, ignoreEos: true })
    await sleep(500)
    const frozenAt = performance.now()
    await fault(r1!.url, { metrics: 'stale' })
    await until(() => s.endpoint('p-1')?.status() === 'stale', 3000, 'p-1 stale', 5)
    const staleAt = performance.now()
    const snap = s.endpoint('p-1')?.snapshot() as {
      scrape: { failure: string }
      effectiveLoad: { fresh: boolean }
    }
    expect(snap.scrape.failure).toBe('frozen')
    expect(snap.effectiveLoad.fresh).toBe(false)
    expect(staleAt - frozenAt).toBeLessThanOrEqual(1000 + 100 + 50) // limit + one interval + timer slack
    // treated as saturated: what was in flight there ends, then at most one probe at a time
    await until(() => (s.endpoint('p-1')?.inflight ?? 9) <= 1, 3000, 'p-1 drained to one probe')
    let most = 0
    const sampler = setInterval(() => {
      most = Math.max(most, s.endpoint('p-1')?.inflight ?? 0)
    }, 5)
    await sleep(1500)
    clearInterval(sampler)
    const replies = await load.stop()
    expect(most).toBeLessThanOrEqual(1)
    expect(s.endpoint('p-1')?.status()).toBe('stale')
    const later = replies.filter((r) => r.startedAt > staleAt + 20)
    expect(later.every((r) => r.status === 200)).toBe(true)
    expect(later.filter((r) => r.backend === 'p-0').length).toBeGreaterThanOrEqual(4)
    expect(later.filter((r) => r.backend === 'p-1').length).toBeLessThanOrEqual(3)
  })

  it('come back to fresh as soon as they move again', async () => {
    sim = await sims(2)
    const [r0, r1] = sim.replicas
    const s = await startStack({ endpoints: [r0!.url, r1!.url], stale_after_ms: 400 })
    stack = s
    await until(() => s.pool.usableCount() === 2, 3000, 'both endpoints fresh')
    const load = traffic(s, 4, { maxTokens: 300, ignoreEos: true })
    await sleep(300)
    await fault(r1!.url, { metrics: 'stale' })
    await until(() => s.endpoint('p-1')?.status() === 'stale', 3000, 'p-1 stale')
    await fault(r1!.url, {})
    await until(() => s.endpoint('p-1')?.status() === 'ready', 1000, 'p-1 fresh again')
    await load.stop()
  })
})
