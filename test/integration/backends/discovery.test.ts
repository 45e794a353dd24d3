/**
 * Acceptance 5: DNS discovery with a stub resolver. Endpoints are added and removed while
 * requests flow; no request fails because its endpoint left (removed endpoints drain).
 * Three simulator replicas listen on 127.0.0.1, 127.0.0.2 and 127.0.0.3 on one port, as the
 * pods behind a headless Service do.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { SimHandle } from '../../../src/sim/index.js'
import { type Stack, sims, startStack, traffic } from './stack.js'
import { sleep, until } from './wait.js'

const started: SimHandle[] = []
let stack: Stack | undefined

afterEach(async () => {
  await stack?.close()
  await Promise.all(started.map((s) => s.close()))
  started.length = 0
  stack = undefined
})

describe('dns discovery', () => {
  it('adds and drains endpoints under load without failing a request', async () => {
    const first = await sims(1, { host: '127.0.0.1' })
    started.push(first)
    const port = first.replicas[0]!.port
    // .2 runs 4x slower, so its requests (~1 s) are still in flight when discovery drops it,
    // however late a loaded machine runs the lookup
    started.push(await sims(1, { host: '127.0.0.2', port, timeScale: 4 }))
    started.push(await sims(1, { host: '127.0.0.3', port }))

    let addresses = ['127.0.0.1', '127.0.0.2']
    const lookups: string[] = []
    const s = await startStack(
      { discovery: { type: 'dns', name: 'vllm.models.svc.cluster.local', port, interval_ms: 100 } },
      {},
      async (name) => {
        lookups.push(name)
        return [...addresses]
      },
    )
    stack = s
    await until(() => s.pool.usableCount() === 2, 3000, 'two discovered endpoints fresh')
    expect(lookups[0]).toBe('vllm.models.svc.cluster.local')

    // requests of ~0.25 s, so some are always in flight on the endpoint that leaves
    const load = traffic(s, 6, { maxTokens: 80, ignoreEos: true })
    await sleep(400)
    const inflightOn = (origin: string) =>
      s.pool.allEndpoints().find((e) => e.origin === origin)?.inflight ?? 0

    addresses = ['127.0.0.1', '127.0.0.2', '127.0.0.3'] // scale up
    await until(() => s.pool.usableCount() === 3, 3000, 'the third endpoint in use')
    await sleep(400)

    await until(() => inflightOn(`http://127.0.0.2:${port}`) > 0, 2000, 'requests in flight on .2')
    addresses = ['127.0.0.1', '127.0.0.3'] // .2 leaves with requests in flight
    const leaving = await until(
      () => s.pool.drainingEndpoints().find((e) => e.origin === `http://127.0.0.2:${port}`),
      2000,
      '.2 draining',
      2,
    )
    const inflightWhenLeft = leaving.inflight
    await sleep(400)

    addresses = ['127.0.0.3'] // and .1 too
    await sleep(600)
    const replies = await load.stop()

    expect(inflightWhenLeft).toBeGreaterThan(0) // the test did remove an endpoint under load
    expect(replies.length).toBeGreaterThan(30)
    expect(replies.filter((r) => r.status !== 200)).toEqual([])
    const served = new Set(replies.map((r) => r.backend))
    expect(served.size).toBe(3) // every endpoint took requests at some point
    expect(s.pool.endpoints().map((e) => e.origin)).toEqual([`http://127.0.0.3:${port}`])
    await until(() => s.pool.drainingEndpoints().length === 0, 3000, 'drained endpoints closed')
    expect(leaving.inflight).toBe(0)
  })

  it('keeps its endpoints when a lookup fails', async () => {
    const sim = await sims(1)
    started.push(sim)
    const port = sim.replicas[0]!.port
    let fail = false
    const s = await startStack(
      { discovery: { type: 'dns', name: 'svc', port, interval_ms: 50 } },
      {},
      async () => {
        if (fail) throw Object.assign(new Error('queryA ETIMEOUT svc'), { code: 'ETIMEOUT' })
        return ['127.0.0.1']
      },
    )
    stack = s
    await until(() => s.pool.usableCount() === 1, 3000, 'endpoint fresh')
    fail = true
    await sleep(300)
    expect(s.pool.usableCount()).toBe(1)
    expect((await s.chat()).status).toBe(200)
  })
})
