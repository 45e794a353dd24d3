/**
 * Bad input, bodies: property-based (fast-check, seeded; FC_SEED=N reproduces a failure)
 * over every JSON route of the gateway as a whole (admission, tenants and limits,
 * telemetry) in front of a healthy fake server, through `inject`. Each answer must be a
 * success from the server or an OpenAI-shaped refusal, never a 5xx of the gateway's own;
 * input that is bad for sure must be refused with a 4xx; and when it is over, nothing is
 * held (no request in flight, queued or leased) and the heap has not grown without bound.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { settledResidue } from '../../helpers/residue.js'
import { checkAnswer } from './answer-check.js'
import {
  anyJson,
  badCount,
  brokenJson,
  contentType,
  deepBody,
  invalidUtf8,
  JSON_ROUTES,
  openaiBody,
  runs,
} from './bad-input-arbitraries.js'
import { type FuzzStack, GOOD_KEY, startFuzzStack } from './fuzz-stack.js'

/** Cases per property x FC_SCALE (default 1: 7,200 cases in this file). */
const N = Number(process.env.FC_SCALE ?? 1)

describe('bad input: request bodies (property-based)', { timeout: 120_000 }, () => {
  let s: FuzzStack
  let heapBefore = 0

  beforeAll(async () => {
    s = await startFuzzStack({ anonymous: true, raw: { server: { body_limit_bytes: 256 * 1024 } } })
    heapBefore = process.memoryUsage().heapUsed
  })
  afterAll(async () => {
    await s?.close()
  })

  const send = async (url: string, payload: string | Buffer, headers: Record<string, string> = {}) => {
    const res = await s.runtime.apps.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', ...headers },
      payload,
    })
    return { status: res.statusCode, headers: res.headers, body: res.body }
  }
  const route = fc.constantFrom(...JSON_ROUTES)

  it('answers any JSON value on every JSON route without a 5xx of its own', async () => {
    await fc.assert(
      fc.asyncProperty(route, anyJson, async (url, v) => {
        const payload = JSON.stringify(v)
        const a = await send(url, payload)
        // only an object can be a request: everything else is refused
        const isObject = typeof v === 'object' && v !== null && !Array.isArray(v)
        checkAnswer(a, `${url} ${payload}`, { mustRefuse: !isObject })
      }),
      runs('any-json', 2000 * N),
    )
  })

  it('answers OpenAI-looking bodies with fields of any type or value', async () => {
    await fc.assert(
      fc.asyncProperty(route, openaiBody, fc.boolean(), async (url, body, keyed) => {
        const payload = JSON.stringify(body)
        const a = await send(url, payload, keyed ? { authorization: `Bearer ${GOOD_KEY}` } : {})
        checkAnswer(a, `${url} ${payload.slice(0, 300)}`, {
          mustRefuse: Buffer.byteLength(payload) > 256 * 1024,
        })
      }),
      runs('openai-body', 2000 * N),
    )
  })

  it('refuses a token count that is not a positive integer with 400, naming the field', async () => {
    const field = fc.constantFrom('max_tokens', 'max_completion_tokens', 'max_output_tokens')
    await fc.assert(
      fc.asyncProperty(route, field, badCount, async (url, name, value) => {
        const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], prompt: 'hi', [name]: value }
        const payload = JSON.stringify(body)
        const a = await send(url, payload)
        // null means "not set", as in the OpenAI API
        if (value === null) {
          checkAnswer(a, payload)
          return
        }
        const code = checkAnswer(a, payload, { mustRefuse: true })
        expect(a.status, payload).toBe(400)
        expect(code).toBe('GW_ERR_INVALID_PARAM')
        expect((JSON.parse(a.body) as { error: { param: string } }).error.param).toBe(name)
      }),
      runs('bad-count', 1000 * N),
    )
  })

  it('refuses broken JSON, deep nesting and bytes that are not UTF-8 with a 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(route, fc.oneof(brokenJson, deepBody), async (url, payload) => {
        let valid = true
        try {
          JSON.parse(payload)
        } catch {
          valid = false
        }
        const a = await send(url, payload)
        checkAnswer(a, `${url} ${payload.slice(0, 200)}`, {
          mustRefuse: !valid || payload.length > 256 * 1024,
        })
      }),
      runs('broken-json', 800 * N),
    )
    await fc.assert(
      fc.asyncProperty(route, invalidUtf8, async (url, payload) => {
        const a = await send(url, payload)
        checkAnswer(a, `${url} ${payload.toString('hex')}`)
      }),
      runs('invalid-utf8', 500 * N),
    )
  })

  it('refuses bodies of other media types with 415 and odd content types without a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        route,
        contentType,
        fc.oneof(
          anyJson.map((v) => JSON.stringify(v)),
          brokenJson,
        ),
        async (url, ct, payload) => {
          const a = await send(url, payload, { 'content-type': ct })
          checkAnswer(a, `${url} content-type '${ct}' ${payload.slice(0, 100)}`)
          if (!/^application\/json/i.test(ct.trim())) expect([400, 413, 415], ct).toContain(a.status)
        },
      ),
      runs('content-type', 800 * N),
    )
  })

  it('refuses a body over the limit with 413, however it is made', async () => {
    const big = fc.integer({ min: 256 * 1024 + 1, max: 1024 * 1024 })
    await fc.assert(
      fc.asyncProperty(route, big, fc.boolean(), async (url, size, valid) => {
        const pad = 'y'.repeat(size)
        const payload = valid ? JSON.stringify({ model: 'm', prompt: pad }) : `{"model":"m","prompt":"${pad}`
        const a = await send(url, payload)
        expect(checkAnswer(a, `${url} ${size} bytes`, { mustRefuse: true })).toBe('GW_ERR_BODY_TOO_LARGE')
      }),
      runs('too-large', 100 * N),
    )
  })

  it('holds nothing afterwards, and its heap stays bounded', async () => {
    expect(await settledResidue(s.adminUrl)).toEqual([])
    // thousands of requests, some of a megabyte: what stays must be far less than what came
    const grown = process.memoryUsage().heapUsed - heapBefore
    expect(grown).toBeLessThan(200 * 1024 * 1024)
    const health = await fetch(`${s.adminUrl}/healthz`)
    expect(health.status).toBe(200)
  })
})
