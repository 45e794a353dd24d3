/**
 * Bad input, headers: property-based (fast-check, seeded; FC_SEED=N reproduces) over every
 * public route, with keys required (no anonymous tenant). Random credentials, identity
 * and class headers, long values; then, on real sockets, duplicated and conflicting headers
 * as Node parses them. Every answer is a server's success or an OpenAI-shaped refusal,
 * never a 5xx of the gateway's own; and a request is only ever served as the tenant whose
 * key it carries (never the one an `x-tenant-id` names), in a class that tenant may use.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawExchange } from '../../helpers/raw-http.js'
import { settledResidue } from '../../helpers/residue.js'
import { checkAnswer } from './answer-check.js'
import { headerValue, runs } from './bad-input-arbitraries.js'
import { type FuzzStack, GOOD_KEY, OTHER_KEY, sha, startFuzzStack } from './fuzz-stack.js'

const ADMIN_TOKEN = 'admin-fuzz-token-42'

const N = Number(process.env.FC_SCALE ?? 1)
const ROUTES: [string, string][] = [
  ['POST', '/v1/chat/completions'],
  ['POST', '/v1/completions'],
  ['POST', '/v1/responses'],
  ['POST', '/v1/embeddings'],
  ['GET', '/v1/models'],
  ['POST', '/v1/files'],
  ['GET', '/v1/fine_tuning/jobs'],
  ['DELETE', '/v1/chat/completions'],
  ['POST', '/v2/nope'],
]

const credential = fc.oneof(
  fc.constantFrom(
    `Bearer ${GOOD_KEY}`,
    `bearer   ${GOOD_KEY}  `,
    `Bearer ${OTHER_KEY}`,
    `Basic ${GOOD_KEY}`,
    GOOD_KEY,
    `Bearer ${GOOD_KEY}x`,
    'Bearer',
    'Bearer ',
    `Bearer ${GOOD_KEY} ${OTHER_KEY}`,
  ),
  headerValue,
)

const headersArb = fc.record(
  {
    authorization: credential,
    'x-api-key': fc.oneof(fc.constantFrom(GOOD_KEY, OTHER_KEY, ` ${OTHER_KEY} `), headerValue),
    'x-tenant-id': fc.constantFrom('acme', 'other', 'anon', 'root', '../acme', ''),
    'x-priority': headerValue,
    'x-gateway-allow-demotion': fc.constantFrom('true', 'false', 'TRUE', '1'),
    'x-request-id': headerValue,
    accept: fc.constantFrom('application/json', 'text/event-stream', '*/*', ''),
    'x-forwarded-for': fc.constantFrom('10.0.0.1', '1.1.1.1, 2.2.2.2', 'x'.repeat(500)),
    'content-encoding': fc.constantFrom('gzip', 'br', 'identity'),
  },
  { requiredKeys: [] },
)

const bodyArb = fc.record(
  {
    model: fc.constantFrom('m', 'm-alias', 'nope'),
    messages: fc.constant([{ role: 'user', content: 'hi' }]),
    max_tokens: fc.integer({ min: 1, max: 8 }),
    service_tier: fc.constantFrom('flex', 'default', 'priority', 'batch'),
    stream: fc.boolean(),
  },
  { requiredKeys: ['model'] },
)

/** The tenant a request carrying `headers` may be served as, by its key (as identify reads it). */
function keyOwner(headers: Record<string, string>): string | undefined {
  const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')
  const key = m?.[1] ?? (headers['x-api-key']?.trim() || undefined)
  if (key === GOOD_KEY) return 'acme'
  if (key === OTHER_KEY) return 'other'
  return undefined
}

interface RequestLine {
  tenant?: string
  class?: string
  status?: number
}

describe('bad input: headers (property-based)', { timeout: 120_000 }, () => {
  let s: FuzzStack
  beforeAll(async () => {
    s = await startFuzzStack({ anonymous: false, raw: { server: { admin_token_sha256: sha(ADMIN_TOKEN) } } })
  })
  afterAll(async () => {
    await s?.close()
  })

  /** The request's log line, by the id the gateway gave it (echoed in x-request-id). */
  const logLine = (id: string | undefined): RequestLine | undefined => {
    if (id === undefined) return undefined
    for (let i = s.logText.length - 1; i >= 0 && i >= s.logText.length - 50; i--) {
      const l = s.logText[i] as string
      if (!l.includes(`"reqId":${JSON.stringify(id)}`) || !l.includes('"msg":"request"')) continue
      return JSON.parse(l) as RequestLine
    }
    return undefined
  }

  const checkIdentity = (line: RequestLine | undefined, owner: string | undefined, what: string) => {
    if (line?.tenant === undefined) return
    // 'default' is no tenant (the ticket's placeholder before identify: a 401, or a route it never reaches)
    if (line.tenant === 'default') {
      // refused before it had one (a 401, a 415 or 400 of the body parser, a 404): never served as nobody
      expect(line.status ?? 0, what).toBeGreaterThanOrEqual(400)
      return
    }
    expect(line.tenant, what).toBe(owner)
    // acme may use interactive only (allowed_classes); nothing it sends puts it in batch
    if (line.tenant === 'acme' && line.class !== undefined) expect(line.class, what).toBe('interactive')
  }

  it('answers any header set on every route, as the tenant of the key sent or not at all', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ROUTES),
        headersArb,
        bodyArb,
        async ([method, url], headers, body) => {
          const res = await s.runtime.apps.app.inject({
            method: method as 'GET',
            url,
            headers: { 'content-type': 'application/json', ...headers },
            ...(method === 'GET' ? {} : { payload: JSON.stringify(body) }),
          })
          const what = `${method} ${url} ${JSON.stringify(headers).slice(0, 300)} ${JSON.stringify(body)}`
          checkAnswer({ status: res.statusCode, headers: res.headers, body: res.body }, what)
          const owner = keyOwner(headers)
          const line = logLine(res.headers['x-request-id'] as string | undefined)
          checkIdentity(line, owner, what)
          // without a key of a tenant, nothing is served but the model list
          if (owner === undefined && url !== '/v1/models' && url !== '/v2/nope' && method !== 'DELETE')
            expect(res.statusCode, what).toBe(401)
          if (owner === 'acme' && res.headers['x-gateway-class'] !== undefined)
            expect(res.headers['x-gateway-class'], what).toBe('interactive')
        },
      ),
      runs('headers-inject', 2000 * N),
    )
  })

  it('answers duplicated and conflicting headers on real sockets the same way', async () => {
    const dupName = fc.constantFrom(
      'authorization',
      'x-api-key',
      'x-priority',
      'content-type',
      'x-tenant-id',
      'host',
    )
    const dup = fc.tuple(dupName, fc.array(fc.oneof(credential, headerValue), { minLength: 2, maxLength: 4 }))
    let n = 0
    await fc.assert(
      fc.asyncProperty(fc.array(dup, { minLength: 1, maxLength: 3 }), bodyArb, async (dups, body) => {
        const id = `fz-${n++}`
        const payload = JSON.stringify(body)
        const lines = ['POST /v1/chat/completions HTTP/1.1', `x-request-id: ${id}`, 'connection: close']
        if (!dups.some(([name]) => name === 'host')) lines.push('host: gw')
        if (!dups.some(([name]) => name === 'content-type')) lines.push('content-type: application/json')
        for (const [name, values] of dups) for (const v of values) lines.push(`${name}: ${v}`)
        lines.push(`content-length: ${Buffer.byteLength(payload)}`)
        const req = `${lines.join('\r\n')}\r\n\r\n${payload}`
        const r = await rawExchange(s.url, [req], { timeoutMs: 10_000 })
        expect(r.responses.length, req.slice(0, 500)).toBe(1)
        const res = r.responses[0] as NonNullable<(typeof r.responses)[0]>
        checkAnswer(res, req.slice(0, 500))
        // Node keeps the first authorization (and joins other duplicates): identify sees that
        const first = (name: string) => dups.find(([k]) => k === name)?.[1][0]
        const heard: Record<string, string> = {}
        const auth = first('authorization')
        if (auth !== undefined) heard.authorization = auth
        const apiKey = dups.find(([k]) => k === 'x-api-key')?.[1]
        if (apiKey !== undefined)
          heard['x-api-key'] = apiKey.length > 1 ? apiKey.join(', ') : (apiKey[0] ?? '')
        checkIdentity(logLine(id), keyOwner(heard), req.slice(0, 500))
      }),
      runs('headers-socket', 800 * N),
    )
  })

  it('answers anything on the admin listener: probes open, the rest only with its token', async () => {
    const path = fc.oneof(
      fc.constantFrom(
        '/metrics',
        '/healthz',
        '/readyz',
        '/admin/state',
        '/admin/state?x=1',
        '/admin',
        '/v1/models',
      ),
      fc.string({ maxLength: 30 }).map((p) => `/${encodeURIComponent(p)}`),
    )
    const method = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS')
    const auth = fc.oneof(
      fc.constantFrom(`Bearer ${ADMIN_TOKEN}`, `Bearer ${ADMIN_TOKEN}x`, `Bearer ${GOOD_KEY}`, 'Bearer', ''),
      headerValue,
    )
    await fc.assert(
      fc.asyncProperty(
        path,
        method,
        auth,
        fc.option(fc.string({ maxLength: 100 })),
        async (url, m, a, payload) => {
          const res = await s.runtime.apps.admin.inject({
            method: m as 'GET',
            url,
            headers: a === '' ? {} : { authorization: a },
            ...(payload === null || m === 'GET' || m === 'HEAD' ? {} : { payload }),
          })
          const what = `${m} ${url} auth '${a.slice(0, 60)}'`
          expect(res.statusCode, what).toBeLessThan(500)
          const bare = url.split('?')[0]
          const probe = bare === '/healthz' || bare === '/readyz'
          const token = a.trim() === `Bearer ${ADMIN_TOKEN}`
          if (m === 'GET' && probe) expect(res.statusCode, what).toBe(200)
          if (!probe && !token) expect(res.statusCode, what).toBe(401)
          // every refusal (401, an unknown route's 404) is OpenAI-shaped, as on the public listener
          if (res.statusCode >= 400 && m !== 'HEAD')
            checkAnswer({ status: res.statusCode, headers: res.headers, body: res.body }, what)
          if (m === 'GET' && token && (bare === '/metrics' || bare === '/admin/state'))
            expect(res.statusCode, what).toBe(200)
        },
      ),
      runs('admin-routes', 600 * N),
    )
  })

  it('holds nothing afterwards', async () => {
    expect(await settledResidue(s.adminUrl, { authorization: `Bearer ${ADMIN_TOKEN}` })).toEqual([])
  })
})
