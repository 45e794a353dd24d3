/**
 * The fault suite's shared-state faults, on real processes: `slo-gateway serve` (its built-in
 * simulator behind it) with a tenant's limits on a real redis-server, under waves of streams.
 * Redis stopped (SIGKILL) mid-wave and started again; Redis wedged (SIGSTOP: connected,
 * silent) mid-wave and thawed; the config file replaced by an invalid one mid-wave. For each:
 * every request ends within its timeout with a response or a clean final error event, the
 * gateway stays up, and after it nothing is held (requests in flight, queues, the ledger,
 * prefill, the tenant's leases and the token reservations they carry, in Redis and in the
 * fail-open local share), and the metrics counted what happened: each request once, the
 * store's errors, degraded mode on and off, the reload refused. And Redis slow but answering
 * (a proxy delays every byte): within the store's timeout nothing changes; past it, the
 * limiter serves from its fail-open share and releases what the late answers took.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../../src/tenants/directory.js'
import { type DelayProxy, startDelayProxy } from '../../helpers/delay-proxy.js'
import { type GatewayProcess, startGatewayProcess, untilReady } from '../../helpers/gateway-process.js'
import { type RedisServer, startRedis } from '../../helpers/redis.js'
import { settledResidue } from '../../helpers/residue.js'
import { sleep } from '../../helpers/upstream.js'
import { metricSum, wave } from './load-wave.js'

const KEY = 'sk-store-faults'
const WAVE = 24
const AUTH = { authorization: `Bearer ${KEY}` }

const TENANTS = [
  {
    id: 'acme',
    api_keys: [hashKey(KEY)],
    limits: { rpm: 100_000, tpm: 50_000_000, max_concurrent: 1_000 },
  },
]
const config = (redisUrl: string, tenants: object = TENANTS, redisTimeoutMs?: number) => ({
  simulator: { enabled: true, replicas: 2, time_scale: 1 },
  tenants,
  limits: {
    store: 'redis',
    on_store_error: 'fail_open',
    redis: {
      url: redisUrl,
      key_prefix: 'faults:',
      ...(redisTimeoutMs === undefined ? {} : { timeout_ms: redisTimeoutMs }),
    },
  },
  classes: { interactive: { slo: { ttft_ms: 5_000, tpot_ms: 500 }, max_queue_wait_ms: 10_000 } },
})

/** Every stream of a wave ended well: none cut, none past its timeout, all counted. */
function clean(counts: Record<string, number>, n = WAVE): void {
  const what = JSON.stringify(counts)
  expect(counts.cut ?? 0, what).toBe(0)
  expect(counts.timeout ?? 0, what).toBe(0)
  expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(n)
}

/** What a test reads of its gateway: the metrics it checks, and the shared ending of a store fault. */
function probes(gw: () => GatewayProcess) {
  const metrics = async () => (await fetch(`${gw().adminUrl}/metrics`)).text()
  const requests = async () => metricSum(await metrics(), 'slo_gateway_requests_total')
  const storeErrors = async (code: string) =>
    metricSum(await metrics(), 'slo_gateway_ratelimit_store_errors_total', { code })
  const degraded = async () => metricSum(await metrics(), 'slo_gateway_ratelimit_degraded_mode')
  const healthy = async () => expect((await fetch(`${gw().adminUrl}/healthz`)).status).toBe(200)
  /**
   * After a store fault: degraded mode ends, a wave is served in full, nothing is held, and
   * the `waves + 1` waves since `before` are each counted once.
   */
  const healsAndHoldsNothing = async (before: number, waves = 2) => {
    for (let i = 0; i < 100 && (await degraded()) !== 0; i++) await sleep(100)
    expect(await degraded()).toBe(0)
    const after = await wave(gw().url, WAVE, { maxTokens: 16, headers: AUTH })
    clean(after)
    expect(after.complete).toBe(WAVE)
    expect(await settledResidue(gw().adminUrl, {}, 20_000)).toEqual([])
    expect((await requests()) - before).toBe((waves + 1) * WAVE)
  }
  return { metrics, requests, storeErrors, degraded, healthy, healsAndHoldsNothing }
}

describe('Redis and config faults under load', { timeout: 120_000 }, () => {
  let redis: RedisServer
  let gw: GatewayProcess

  beforeAll(async () => {
    redis = await startRedis()
    gw = await startGatewayProcess(config(redis.url))
    await untilReady(gw.adminUrl)
  }, 60_000)
  afterAll(async () => {
    await gw?.stop()
    await redis?.stop()
  })

  const { metrics, requests, storeErrors, degraded, healthy, healsAndHoldsNothing } = probes(() => gw)
  /** The tenant's leases held now: in Redis, and in the fail-open local share. */
  const leases = async () => {
    const s = (await (await fetch(`${gw.adminUrl}/admin/state`)).json()) as {
      tenants: { usage: { acme: { concurrent?: number } }; limiter: { localLeases?: number } }
    }
    return (s.tenants.usage.acme.concurrent ?? 0) + (s.tenants.limiter.localLeases ?? 0)
  }

  it('serves a wave with the limits on Redis, holding a lease per stream, nothing after', async () => {
    const before = await requests()
    const running = wave(gw.url, WAVE, { maxTokens: 64, headers: AUTH })
    let most = 0
    for (let i = 0; i < 40 && most === 0; i++) {
      most = await leases()
      await sleep(25)
    }
    const counts = await running
    clean(counts)
    expect(counts.complete).toBe(WAVE)
    // the leases are really taken (so that "zero after" below means something)
    expect(most).toBeGreaterThan(0)
    expect(await settledResidue(gw.adminUrl)).toEqual([])
    expect((await requests()) - before).toBe(WAVE)
  })

  it('Redis stopped mid-wave and started again: served from the local share, healed, nothing held', async () => {
    const before = await requests()
    const errorsBefore = await storeErrors('LIMITER_ERR_UNAVAILABLE')
    const running = wave(gw.url, WAVE, { maxTokens: 64, headers: AUTH })
    await sleep(300)
    await redis.stop()
    // arrivals while it is down: the fail-open share admits them (1,000 concurrent / 1 replica)
    const down = wave(gw.url, WAVE, { maxTokens: 16, headers: AUTH })
    const [during, whileDown] = await Promise.all([running, down])
    clean(during)
    clean(whileDown)
    expect(whileDown.complete).toBe(WAVE)
    expect(await degraded()).toBe(1)
    expect(await storeErrors('LIMITER_ERR_UNAVAILABLE')).toBeGreaterThan(errorsBefore)
    await healthy()
    await redis.start()
    await healsAndHoldsNothing(before)
  })

  it('Redis wedged (SIGSTOP) mid-wave, then thawed: nothing waits on it, nothing held after', async () => {
    const before = await requests()
    const timeoutsBefore = await storeErrors('LIMITER_ERR_TIMEOUT')
    const running = wave(gw.url, WAVE, { maxTokens: 64, headers: AUTH })
    await sleep(300)
    redis.pause()
    let during: Record<string, number>
    let whileWedged: Record<string, number>
    try {
      // at once: their checks reach the wedged Redis (before degraded mode), time out, and
      // land when it thaws; the leases they take there must be released too
      whileWedged = await wave(gw.url, WAVE, { maxTokens: 16, headers: AUTH })
      during = await running
      expect(await degraded()).toBe(1)
    } finally {
      redis.resume()
    }
    clean(during)
    clean(whileWedged)
    expect(whileWedged.complete).toBe(WAVE)
    expect(await storeErrors('LIMITER_ERR_TIMEOUT')).toBeGreaterThan(timeoutsBefore)
    await healthy()
    await healsAndHoldsNothing(before)
  })

  it('the config file replaced by an invalid one mid-wave: refused and counted, the old config serves, nothing held', async () => {
    const reloads = async (result: string) =>
      metricSum(await metrics(), 'slo_gateway_config_reloads_total', { result })
    const before = await requests()
    const refusedBefore = await reloads('refused')
    const running = wave(gw.url, WAVE, { maxTokens: 64, headers: AUTH })
    await sleep(300)
    // not YAML at all, then YAML the schema refuses: each refused, each counted
    gw.writeConfig('tenants: [ { id: acme, api_keys: [')
    for (let i = 0; i < 100 && (await reloads('refused')) < refusedBefore + 1; i++) await sleep(50)
    gw.writeConfig(config(redis.url, [{ ...TENANTS[0], limits: { rpm: 'ten' } }]))
    for (let i = 0; i < 100 && (await reloads('refused')) < refusedBefore + 2; i++) await sleep(50)
    expect(await reloads('refused')).toBe(refusedBefore + 2)
    const whileBad = await wave(gw.url, WAVE, { maxTokens: 16, headers: AUTH })
    const during = await running
    clean(during)
    clean(whileBad)
    expect(during.complete).toBe(WAVE)
    expect(whileBad.complete).toBe(WAVE)
    expect(gw.proc.stdout).toContain('tenants[0].limits.rpm')
    await healthy()
    // a good file again: applied, counted, and it serves
    const appliedBefore = await reloads('applied')
    gw.writeConfig(config(redis.url))
    for (let i = 0; i < 100 && (await reloads('applied')) === appliedBefore; i++) await sleep(50)
    expect(await reloads('applied')).toBe(appliedBefore + 1)
    expect(await settledResidue(gw.adminUrl)).toEqual([])
    expect((await requests()) - before).toBe(2 * WAVE)
  })
})

describe('a slow Redis that still answers', { timeout: 120_000 }, () => {
  let redis: RedisServer
  let proxy: DelayProxy
  let gw: GatewayProcess

  beforeAll(async () => {
    redis = await startRedis()
    // every byte to and from Redis through a proxy that delays it; the store's timeout 200 ms
    proxy = await startDelayProxy({ host: '127.0.0.1', port: redis.port })
    gw = await startGatewayProcess(config(proxy.url, TENANTS, 200))
    await untilReady(gw.adminUrl)
  }, 60_000)
  afterAll(async () => {
    await gw?.stop()
    await proxy?.close()
    await redis?.stop()
  })

  const { requests, storeErrors, degraded, healthy, healsAndHoldsNothing } = probes(() => gw)

  it('slower than usual, within the store timeout: every check answered, no degraded mode, nothing held', async () => {
    const before = await requests()
    const timeoutsBefore = await storeErrors('LIMITER_ERR_TIMEOUT')
    proxy.delayMs = 30 // a 60 ms round trip (a loopback Redis answers in a fraction of 1 ms)
    try {
      const counts = await wave(gw.url, WAVE, { maxTokens: 32, headers: AUTH })
      clean(counts)
      expect(counts.complete).toBe(WAVE)
      expect(await storeErrors('LIMITER_ERR_TIMEOUT')).toBe(timeoutsBefore)
      expect(await degraded()).toBe(0)
      expect(await settledResidue(gw.adminUrl, {}, 20_000)).toEqual([])
    } finally {
      proxy.delayMs = 0
    }
    expect((await requests()) - before).toBe(WAVE)
  })

  it('slower than the store timeout: served from the local share, late answers released, healed when it is fast again', async () => {
    const before = await requests()
    const timeoutsBefore = await storeErrors('LIMITER_ERR_TIMEOUT')
    const running = wave(gw.url, WAVE, { maxTokens: 64, headers: AUTH })
    await sleep(300)
    // 150 ms each way: every check and heartbeat times out, and its answer lands later
    proxy.delayMs = 150
    let during: Record<string, number>
    let whileSlow: Record<string, number>
    try {
      whileSlow = await wave(gw.url, WAVE, { maxTokens: 16, headers: AUTH })
      during = await running
      expect(await degraded()).toBe(1)
    } finally {
      proxy.delayMs = 0
    }
    clean(during)
    clean(whileSlow)
    expect(whileSlow.complete).toBe(WAVE)
    expect(await storeErrors('LIMITER_ERR_TIMEOUT')).toBeGreaterThan(timeoutsBefore)
    await healthy()
    await healsAndHoldsNothing(before)
  })
})
