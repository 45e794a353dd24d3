/**
 * Tenants through the official `openai` client, gateway + simulator: a key that maps to a
 * tenant is served as that tenant; one that does not is a 401 the SDK raises as
 * AuthenticationError; a class the tenant may not use is a 403 (PermissionDeniedError).
 */
import OpenAI from 'openai'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/tenants/directory.js'
import { type SimGateway, startSimGateway } from '../helpers/sim-gateway.js'

const KEY = 'sk-team-a-e2e-0123456789'

describe('tenants through the openai client', () => {
  let gw: SimGateway
  beforeAll(async () => {
    gw = await startSimGateway({
      scale: 1,
      profile: 'tiny',
      raw: {
        auth: {}, // no anonymous tenant: a key is required
        tenants: [{ id: 'team-a', api_keys: [hashKey(KEY)], allowed_classes: ['interactive'] }],
      },
    })
  })
  afterAll(() => gw.close())

  const client = (apiKey: string, headers: Record<string, string> = {}) =>
    new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0, defaultHeaders: headers })
  const ask = { model: 'sim/tiny', max_tokens: 4, messages: [{ role: 'user' as const, content: 'hi' }] }

  it('serves a known key as its tenant', async () => {
    const chat = await client(KEY).chat.completions.create(ask)
    expect(chat.choices[0]?.message.content?.length).toBeGreaterThan(0)
    const metrics = await (await request(`${gw.adminUrl}/metrics`)).body.text()
    expect(metrics).toMatch(/slo_gateway_requests_total\{[^}]*tenant="team-a"[^}]*\} [1-9]/)
    const state = (await (await request(`${gw.adminUrl}/admin/state`)).body.json()) as {
      tenants: { tenants: { id: string }[] }
    }
    expect(state.tenants.tenants.map((t) => t.id)).toEqual(['team-a'])
    expect(JSON.stringify(state)).not.toContain(hashKey(KEY))
  })

  it('answers an unknown key with 401: the SDK raises AuthenticationError', async () => {
    const err = await client('sk-not-a-tenant')
      .chat.completions.create(ask)
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError)
    const e = err as InstanceType<typeof OpenAI.AuthenticationError>
    expect(e.status).toBe(401)
    expect(e.code).toBe('GW_ERR_INVALID_API_KEY')
    expect(e.type).toBe('authentication_error')
    // choosing a tenant by header does not get in
    const spoof = await client('sk-not-a-tenant', { 'x-tenant-id': 'team-a' })
      .chat.completions.create(ask)
      .catch((x: unknown) => x)
    expect(spoof).toBeInstanceOf(OpenAI.AuthenticationError)
  })

  it('answers a class the tenant may not use with 403: PermissionDeniedError', async () => {
    const err = await client(KEY, { 'x-priority': 'batch' })
      .chat.completions.create(ask)
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError)
    expect((err as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('GW_ERR_CLASS_NOT_ALLOWED')
  })
})
