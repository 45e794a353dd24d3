/**
 * TPM under concurrency (issue 15, acceptance 2), through a real gateway with each store
 * (memory, and a real redis-server): many concurrent streams with a large max_tokens are
 * admitted only while their reservations fit the bucket, so what is admitted never
 * overshoots the limit by more than one request's reservation; once they end, the bucket
 * holds the limit minus their real usage (give or take the refill while the test ran).
 */
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../../src/tenants/directory.js'
import type { Limiter } from '../../../src/tenants/limiter.js'
import { MemoryStore } from '../../../src/tenants/memory-store.js'
import { RedisStore } from '../../../src/tenants/redis-store.js'
import { readyBackends } from '../../helpers/backends.js'
import { startGateway } from '../../helpers/gateway.js'
import { type RedisServer, startRedis } from '../../helpers/redis.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream, usageEvent } from '../../helpers/upstream.js'

const TPM = 20_000
const MAX_TOKENS = 4_000
const KEY = 'sk-tpm-concurrency-test'
/** What each stream really uses: its prompt and this many completion tokens. */
const PROMPT = 12
const COMPLETION = 300

let up: FakeUpstream
let redis: RedisServer
let release: () => void = () => {}
let held: Promise<void> = Promise.resolve()

beforeAll(async () => {
  ;[up, redis] = await Promise.all([startUpstream(), startRedis()])
  up.handler = async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(chunkEvent('a'))
    await held
    res.write(chunkEvent('', 'stop'))
    res.write(usageEvent(PROMPT, COMPLETION))
    res.end('data: [DONE]\n\n')
  }
})
afterAll(async () => {
  await Promise.all([up?.close(), redis?.stop()])
})

const stores: [string, () => Promise<Limiter>][] = [
  ['memory', async () => new MemoryStore()],
  [
    'redis',
    async () => {
      const s = new RedisStore({ url: redis.url, keyPrefix: `tpm-${Date.now()}:` })
      await s.ready(5_000)
      return s
    },
  ],
]

describe.each(stores)('tpm with many concurrent streams (%s store)', (_name, makeStore) => {
  it('admits reservations only while they fit, and reconciles to the real usage', async () => {
    const limiter = await makeStore()
    const gw = await startGateway(
      await readyBackends([up.url]),
      {
        tenants: [{ id: 'acme', api_keys: [hashKey(KEY)], limits: { tpm: TPM } }],
        limits: { reserve_output_cap: 8_192 },
      },
      undefined,
      { limiter },
    )
    try {
      held = new Promise((r) => (release = r))
      const t0 = performance.now()
      const answers = await Promise.all(
        Array.from({ length: 12 }, () =>
          request(`${gw.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
            body: JSON.stringify({
              model: 'm',
              stream: true,
              max_tokens: MAX_TOKENS,
              messages: [{ role: 'user', content: 'tell me a long story' }],
            }),
          }),
        ),
      )
      const admitted = answers.filter((a) => a.statusCode === 200)
      const refused = answers.filter((a) => a.statusCode === 429)
      expect(admitted.length + refused.length).toBe(12)
      // each reserves its prompt estimate + max_tokens: a little over 4,000 of 20,000
      const left = admitted.map((a) => Number(a.headers['x-ratelimit-remaining-tokens']))
      const reservation = TPM - Math.max(...left)
      expect(reservation).toBeGreaterThan(MAX_TOKENS)
      expect(admitted.length).toBe(Math.floor(TPM / reservation))
      expect(admitted.length * reservation).toBeLessThanOrEqual(TPM + reservation)
      for (const r of refused) {
        const body = (await r.body.json()) as { error: { code: string } }
        expect(body.error.code).toBe('GW_ERR_RATE_LIMITED')
        expect(Number(r.headers['retry-after-ms'])).toBeGreaterThan(0)
      }

      release()
      for (const a of admitted) expect(await a.body.text()).toContain('[DONE]')
      // every admitted stream settled with its usage
      const end = performance.now() + 5_000
      let usage = await limiter.usage('acme', { tpm: TPM })
      while (
        usage.concurrent > 0 ||
        gw.tickets.filter((t) => t.usage !== undefined).length < admitted.length
      ) {
        expect(performance.now()).toBeLessThan(end)
        await sleep(10)
        usage = await limiter.usage('acme', { tpm: TPM })
      }
      const used = admitted.length * (PROMPT + COMPLETION)
      const refill = Math.ceil(((performance.now() - t0) * TPM) / 60_000)
      const remaining = usage.tokens!.remaining
      console.log(
        `admitted ${admitted.length}, reservation ${reservation}, used ${used}, remaining ${remaining}, refill ${refill}`,
      )
      expect(remaining).toBeGreaterThanOrEqual(TPM - used - 1)
      expect(remaining).toBeLessThanOrEqual(Math.min(TPM, TPM - used + refill))
    } finally {
      release()
      await gw.close()
      await limiter.close()
    }
  })
})
