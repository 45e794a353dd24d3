/**
 * A tenant's API key is the gateway's credential: the model server never sees it. A key
 * the gateway did not take (anonymous access) goes upstream as before, for servers that
 * check their own key (vLLM's --api-key).
 */
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../../src/tenants/directory.js'
import { type AdmissionGateway, startAdmissionGateway } from '../../helpers/admission-gateway.js'
import { type FakeUpstream, startUpstream } from '../../helpers/upstream.js'

const KEY = 'sk-tenant-key-0123456789'

let up: FakeUpstream
let gw: AdmissionGateway

beforeAll(async () => {
  up = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"choices":[{"finish_reason":"stop"}]}')
  })
  gw = await startAdmissionGateway({
    endpoints: [up.url],
    raw: { auth: { anonymous: 'guest' }, tenants: [{ id: 'team-a', api_keys: [hashKey(KEY)] }] },
  })
})

afterAll(async () => {
  await gw.close()
  await up.close()
})

const send = (headers: Record<string, string>) =>
  request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  }).then((r) => r.body.text().then(() => r.statusCode))

describe('credentials upstream', () => {
  it("drops a tenant's key, by either header", async () => {
    expect(await send({ authorization: `Bearer ${KEY}` })).toBe(200)
    expect(await send({ 'x-api-key': KEY })).toBe(200)
    const seen = up.seen.slice(-2)
    for (const s of seen) {
      expect(s.headers.authorization).toBeUndefined()
      expect(s.headers['x-api-key']).toBeUndefined()
    }
    expect(gw.tickets.slice(-2).map((t) => t.tenant)).toEqual(['team-a', 'team-a'])
  })

  it('forwards a key the gateway did not take (anonymous access)', async () => {
    expect(await send({ authorization: 'Bearer sk-the-servers-own-key' })).toBe(200)
    expect(up.seen.at(-1)?.headers.authorization).toBe('Bearer sk-the-servers-own-key')
    expect(gw.tickets.at(-1)?.tenant).toBe('guest')
  })
})
