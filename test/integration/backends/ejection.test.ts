/**
 * Acceptance 3: a simulator crashed by fault injection is out of use within 1 s, requests
 * keep succeeding on the other, and when it returns it is used again. Both ways an endpoint
 * leaves the rotation are exercised: a fail-closed pool (defaults) drops it as soon as its
 * scrape cannot connect (stale); a fail-open pool, which ignores staleness, needs the
 * breaker to eject it after consecutive connect failures.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { SimHandle } from '../../../src/sim/index.js'
import { fault, type Stack, sims, startStack, traffic } from './stack.js'
import { sleep, until } from './wait.js'

let sim: SimHandle | undefined
let back: SimHandle | undefined
let stack: Stack | undefined

afterEach(async () => {
  await stack?.close()
  await sim?.close()
  await back?.close()
  sim = back = stack = undefined
})

async function crashAndReturn(failOpen: boolean) {
  sim = await sims(2)
  const [r0, r1] = sim.replicas
  const s = await startStack({ endpoints: [r0!.url, r1!.url], fail_open: failOpen })
  stack = s
  await until(() => s.pool.usableCount() === 2 && s.endpoint('p-1')?.isFresh(), 3000, 'both endpoints fresh')
  const load = traffic(s, 4, { maxTokens: 8 })
  await sleep(300)
  const crashedAt = performance.now()
  await fault(r1!.url, { crash: true })
  await until(
    () => {
      const st = s.endpoint('p-1')?.status()
      return failOpen ? st === 'ejected' : st === 'stale' || st === 'ejected'
    },
    2000,
    'p-1 out of use',
    5,
  )
  const outAt = performance.now()
  await sleep(400)
  // the crashed replica comes back on the same port
  back = await sims(1, { port: r1!.port })
  const returnedAt = performance.now()
  await until(
    () => load.replies.some((r) => r.startedAt > returnedAt && r.backend === 'p-1'),
    5000,
    'p-1 used again',
  )
  const replies = await load.stop()
  return { replies, crashedAt, outAt, returnedAt, s }
}

describe('a crashed replica', () => {
  it('fail-closed pool: out of use within 1 s, traffic continues on the other, used again on return', async () => {
    const { replies, crashedAt, outAt, s } = await crashAndReturn(false)
    expect(outAt - crashedAt).toBeLessThan(1000)
    const after = replies.filter((r) => r.startedAt > outAt)
    expect(after.length).toBeGreaterThan(20)
    expect(after.filter((r) => r.status !== 200)).toEqual([]) // every request after it left succeeded
    const failed = replies.filter((r) => r.status !== 200)
    expect(failed.length).toBeLessThanOrEqual(8) // only what was in flight or sent in the first instant
    expect(s.endpoint('p-1')?.status()).toBe('ready')
  })

  it('fail-open pool: the breaker ejects it within 1 s, shows it, and a probe brings it back', async () => {
    const { replies, crashedAt, outAt, s } = await crashAndReturn(true)
    expect(outAt - crashedAt).toBeLessThan(1000)
    const failed = replies.filter((r) => r.status !== 200)
    expect(failed.every((r) => r.status === 502)).toBe(true) // unreachable or reset, never a hang
    expect(failed.length).toBeLessThanOrEqual(12) // 3 to eject + in flight + at most a failed probe or two
    const afterEject = replies.filter((r) => r.startedAt > outAt + 50 && r.endedAt < outAt + 900)
    expect(afterEject.every((r) => r.status === 200 && r.backend === 'p-0')).toBe(true)
    const snap = s.endpoint('p-1')?.breaker.snapshot()
    expect(snap?.ejectionsTotal).toBeGreaterThanOrEqual(1)
    expect(snap?.state).toBe('closed')
  })

  it('the ejection shows on /metrics and /admin/state', async () => {
    sim = await sims(2)
    const s = await startStack({
      endpoints: sim.replicas.map((r) => r.url),
      fail_open: true,
      ejection: { base_ejection_ms: 5000 },
    })
    stack = s
    await until(() => s.pool.usableCount() === 2, 3000, 'both endpoints usable')
    await fault(sim.replicas[1]!.url, { crash: true })
    const load = traffic(s, 2, { maxTokens: 4 })
    await until(() => s.endpoint('p-1')?.status() === 'ejected', 2000, 'ejected')
    await load.stop()
    const metrics = await s.registry.metrics()
    expect(metrics).toContain('slo_gateway_backend_ejected{pool="p",backend="p-1"} 1')
    expect(metrics).toContain('slo_gateway_backend_ejected{pool="p",backend="p-0"} 0')
    expect(metrics).toContain('slo_gateway_backend_up{pool="p",backend="p-1"} 0')
    const res = await fetch(`${s.gw.adminUrl}/admin/state`)
    const body = JSON.stringify(await res.json())
    expect(body).toContain('"status":"ejected"')
    expect(body).toMatch(/"breaker":\{"state":"open"/)
  })
})

describe('a pool with no usable endpoint', () => {
  it('answers 503 with Retry-After at once, without hanging', async () => {
    sim = await sims(2)
    const s = await startStack({ endpoints: sim.replicas.map((r) => r.url) })
    stack = s
    await until(() => s.pool.usableCount() === 2, 3000, 'both endpoints fresh')
    for (const r of sim.replicas) await fault(r.url, { crash: true })
    await until(() => s.pool.usableCount() === 0, 2000, 'no endpoint usable')
    const t0 = performance.now()
    const res = await fetch(`${s.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/tiny', messages: [{ role: 'user', content: 'hi' }] }),
    })
    const elapsed = performance.now() - t0
    expect(res.status).toBe(503)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(Number(res.headers.get('retry-after-ms'))).toBeGreaterThan(0)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('GW_ERR_NO_BACKEND')
    expect(elapsed).toBeLessThan(500)
  })
})
