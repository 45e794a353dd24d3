import { describe, expect, it } from 'vitest'
import { configSchema } from '../../../src/config/schema.js'
import { errorHeaders, GatewayError } from '../../../src/errors.js'
import type { GatewayRequest, StageDeps } from '../../../src/gateway-request.js'
import { hashKey, TenantDirectory } from '../../../src/tenants/directory.js'
import { identifyStage } from '../../../src/tenants/identify.js'
import { stageRequest } from '../../helpers/stage-request.js'

const KEY_A = 'sk-team-a-0123456789'
const KEY_B = 'sk-team-b-9876543210'

function identify(raw: Record<string, unknown>) {
  const config = configSchema.parse(raw)
  const deps = {
    classes: config.classes,
    tenants: TenantDirectory.fromConfig(config),
  } as unknown as StageDeps
  return identifyStage(deps)
}

const TENANTS = [
  { id: 'team-a', api_keys: [hashKey(KEY_A)], weight: 3 },
  {
    id: 'team-b',
    api_keys: [hashKey(KEY_B).toUpperCase()],
    default_class: 'batch',
    allowed_classes: ['batch'],
  },
]

function req(headers: Record<string, string>, received: unknown = { model: 'm' }): GatewayRequest {
  return stageRequest('/v1/chat/completions', received, headers)
}

function refused(result: unknown): GatewayError {
  if (!(result instanceof GatewayError)) throw new Error(`expected a refusal, got ${String(result)}`)
  return result
}

describe('identify stage', () => {
  const stage = identify({ tenants: TENANTS })

  it('finds the tenant by Authorization: Bearer or x-api-key, and passes its default class and weight on', () => {
    const a = req({ authorization: `Bearer ${KEY_A}` })
    expect(stage(a)).toBeUndefined()
    expect(a.ticket.tenant).toBe('team-a')
    expect(a.ticket.tenantWeight).toBe(3)
    expect(a.ticket.tenantDefaultClass).toBe('interactive')
    const b = req({ 'x-api-key': KEY_B })
    expect(stage(b)).toBeUndefined()
    expect(b.ticket.tenant).toBe('team-b')
    expect(b.ticket.tenantDefaultClass).toBe('batch')
    expect(b.ticket.tenantWeight).toBe(1)
    const lower = req({ authorization: `bearer   ${KEY_A}` })
    expect(stage(lower)).toBeUndefined()
    expect(lower.ticket.tenant).toBe('team-a')
  })

  it('answers an unknown key and a missing one with 401, OpenAI-shaped, not retryable, naming no tenant', () => {
    const bad = refused(stage(req({ authorization: 'Bearer sk-nobody' })))
    expect(bad.status).toBe(401)
    expect(bad.outcome).toBe('invalid')
    expect(bad.toBody()).toEqual({
      error: {
        message: 'The API key is not valid here.',
        type: 'authentication_error',
        code: 'GW_ERR_INVALID_API_KEY',
        param: null,
      },
    })
    expect(bad.toJSON()).not.toContain('sk-nobody')
    expect(errorHeaders(bad)).toMatchObject({ 'x-should-retry': 'false', 'www-authenticate': 'Bearer' })
    const none = refused(stage(req({})))
    expect(none.status).toBe(401)
    expect(none.code).toBe('GW_ERR_MISSING_API_KEY')
    expect(none.type).toBe('authentication_error')
    // a non-Bearer Authorization is no key
    expect(refused(stage(req({ authorization: `Basic ${KEY_A}` }))).code).toBe('GW_ERR_MISSING_API_KEY')
  })

  it('ignores x-tenant-id under api_key auth: it never lets a caller choose a tenant', () => {
    expect(refused(stage(req({ 'x-tenant-id': 'team-a' }))).code).toBe('GW_ERR_MISSING_API_KEY')
    const spoof = req({ 'x-api-key': KEY_B, 'x-tenant-id': 'team-a', 'x-priority': 'batch' })
    expect(stage(spoof)).toBeUndefined()
    expect(spoof.ticket.tenant).toBe('team-b')
    const anon = identify({ tenants: TENANTS, auth: { anonymous: 'guest' } })
    const r = req({ 'x-tenant-id': 'team-a' })
    expect(anon(r)).toBeUndefined()
    expect(r.ticket.tenant).toBe('guest')
  })

  it('serves keyless requests, and unknown keys, as the anonymous tenant when set; known keys as theirs', () => {
    const anon = identify({ tenants: TENANTS, auth: { anonymous: 'demo' } })
    const r = req({})
    expect(anon(r)).toBeUndefined()
    expect(r.ticket.tenant).toBe('demo')
    expect(r.ticket.tenantWeight).toBe(1)
    const wrong = req({ 'x-api-key': 'EMPTY' })
    expect(anon(wrong)).toBeUndefined()
    expect(wrong.ticket.tenant).toBe('demo')
    const known = req({ 'x-api-key': KEY_A })
    expect(anon(known)).toBeUndefined()
    expect(known.ticket.tenant).toBe('team-a')
    // anonymous naming a configured tenant gets that tenant's settings
    const asB = identify({ tenants: TENANTS, auth: { anonymous: 'team-b' } })
    const rb = req({})
    expect(asB(rb)).toBeUndefined()
    expect(rb.ticket.tenantDefaultClass).toBe('batch')
  })

  it('honours x-tenant-id only under auth.mode trusted_header, and only for a configured tenant', () => {
    const trusted = identify({ tenants: TENANTS, auth: { mode: 'trusted_header' } })
    const r = req({ 'x-tenant-id': 'team-a' })
    expect(trusted(r)).toBeUndefined()
    expect(r.ticket.tenant).toBe('team-a')
    expect(r.ticket.tenantWeight).toBe(3)
    const unknown = refused(trusted(req({ 'x-tenant-id': 'team-z' })))
    expect(unknown.status).toBe(401)
    expect(unknown.code).toBe('GW_ERR_UNKNOWN_TENANT')
    expect(unknown.message).not.toContain('team-z')
    expect(refused(trusted(req({ authorization: `Bearer ${KEY_A}` }))).code).toBe('GW_ERR_UNKNOWN_TENANT')
    const own = identify({ tenants: TENANTS, auth: { mode: 'trusted_header', header: 'X-Auth-User' } })
    const o = req({ 'x-auth-user': 'team-b' })
    expect(own(o)).toBeUndefined()
    expect(o.ticket.tenant).toBe('team-b')
  })

  it('refuses a class the tenant may not use with 403, by header or by service_tier', () => {
    const byHeader = refused(stage(req({ 'x-api-key': KEY_B, 'x-priority': 'interactive' })))
    expect(byHeader.status).toBe(403)
    expect(byHeader.type).toBe('permission_error')
    expect(byHeader.code).toBe('GW_ERR_CLASS_NOT_ALLOWED')
    expect(byHeader.message).toBe("Tenant 'team-b' may not use the class 'interactive'; its classes: batch.")
    const byTier = refused(stage(req({ 'x-api-key': KEY_B }, { model: 'm', service_tier: 'priority' })))
    expect(byTier.status).toBe(403)
    // allowed: its own class, and no class asked at all (its default)
    expect(stage(req({ 'x-api-key': KEY_B, 'x-priority': 'batch' }))).toBeUndefined()
    expect(stage(req({ 'x-api-key': KEY_B }, { model: 'm', service_tier: 'flex' }))).toBeUndefined()
    // an unknown class is admission's 400, not a 403
    expect(stage(req({ 'x-api-key': KEY_B, 'x-priority': 'gold' }))).toBeUndefined()
  })

  it('serves a disallowed class in the default class when on_disallowed_class is default', () => {
    const lenient = identify({
      tenants: [{ ...TENANTS[1], on_disallowed_class: 'default' }],
    })
    const r = req({ 'x-api-key': KEY_B, 'x-priority': 'interactive' })
    expect(lenient(r)).toBeUndefined()
    expect(r.ticket.requestedClass).toBe('batch')
    const t = req({ 'x-api-key': KEY_B }, { model: 'm', service_tier: 'priority' })
    expect(lenient(t)).toBeUndefined()
    expect(t.ticket.requestedClass).toBe('batch') // x-priority wins over service_tier in classify
  })
})
