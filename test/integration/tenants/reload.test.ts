/**
 * Config reload in a real `slo-gateway serve` process, under load: a key added, a key
 * removed and a limit changed in the file take effect without a restart or a dropped request
 * (every request under way answers, none with a 5xx); an invalid file is refused, its
 * problems logged, and the old config keeps serving; SIGHUP reloads too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../../src/tenants/directory.js'
import {
  chat,
  chatUpstream,
  type GatewayProcess,
  startGatewayProcess,
  untilReady,
} from '../../helpers/gateway-process.js'
import { type FakeUpstream, sleep } from '../../helpers/upstream.js'

let up: FakeUpstream
let gw: GatewayProcess

const config = (tenants: object[]) => ({
  log: { level: 'info' },
  backends: { pools: [{ name: 'p', models: ['*'], endpoints: [up.url] }] },
  tenants,
})

const OLD = 'sk-old-key'
const NEW = 'sk-new-key'

beforeAll(async () => {
  up = await chatUpstream()
  gw = await startGatewayProcess(config([{ id: 'acme', api_keys: [hashKey(OLD)], limits: { rpm: 6000 } }]))
  // ready: its first scrape of the upstream is in, so no request is refused as having no backend
  await untilReady(gw.adminUrl)
})

afterAll(async () => {
  await gw?.stop()
  await up?.close()
})

/** Until `ok` holds of a request with `key`, or 10 s; how long it took, ms. */
async function until(key: string, ok: (status: number, h: Headers) => boolean): Promise<number> {
  const t0 = performance.now()
  for (;;) {
    const r = await chat(gw.url, key)
    if (ok(r.status, r.headers)) return performance.now() - t0
    if (performance.now() - t0 > 10_000) throw new Error(`not in effect after 10 s: last ${r.status}`)
    await sleep(10)
  }
}

describe('config reload', () => {
  it('swaps keys and limits under load without a dropped request; refuses a bad file', async () => {
    // load: 4 clients with the old key, all through the test
    const statuses = new Map<number, number>()
    let running = true
    const loaders = Array.from({ length: 4 }, async () => {
      while (running) {
        const r = await chat(gw.url, OLD)
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1)
      }
    })
    await sleep(200)
    expect((await chat(gw.url, NEW)).status).toBe(401)

    // a new key and a lower limit: the file changes, nothing else
    gw.writeConfig(config([{ id: 'acme', api_keys: [hashKey(OLD), hashKey(NEW)], limits: { rpm: 3000 } }]))
    const tookKey = await until(NEW, (s) => s === 200)
    const tookLimit = await until(NEW, (s, h) => h.get('x-ratelimit-limit-requests') === '3000' && s === 200)
    console.log(
      `reload took effect after ${Math.round(tookKey)} ms (key), ${Math.round(tookKey + tookLimit)} ms (limit)`,
    )

    // an invalid file: refused with its problems logged, the old config keeps serving
    gw.writeConfig(config([{ id: 'acme', api_keys: ['not-a-hash'], limits: { rpm: 3000 } }]))
    await gw.proc.waitForLog((l) => String(l.msg).startsWith('config reload refused'), 10_000)
    expect((await chat(gw.url, NEW)).status).toBe(200)
    const refused = gw.proc.stdout.split('\n').find((l) => l.includes('config reload refused'))
    expect(refused).toContain('tenants[0].api_keys[0]')

    // the old key removed, then SIGHUP after an edit the watcher also sees: either way it reloads
    gw.writeConfig(config([{ id: 'acme', api_keys: [hashKey(NEW)], limits: { rpm: 3000 } }]))
    gw.proc.child.kill('SIGHUP')
    await until(OLD, (s) => s === 401)
    await sleep(200)
    running = false
    await Promise.all(loaders)

    // under load: every request answered, none failed by the gateway (401s only after the removal)
    const codes = [...statuses.keys()].sort()
    expect(
      codes.every((c) => c === 200 || c === 401),
      JSON.stringify([...statuses]),
    ).toBe(true)
    expect(statuses.get(200) ?? 0).toBeGreaterThan(20)
    expect(statuses.get(401) ?? 0).toBeGreaterThan(0)
    expect(gw.proc.stdout).toContain('config reloaded (SIGHUP)')
  }, 60_000)
})
