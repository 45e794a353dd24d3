import { describe, expect, it } from 'vitest'
import { PassThrough } from '../../../src/admission/index.js'
import { systemClock } from '../../../src/clock.js'
import { GatewayError } from '../../../src/errors.js'
import { parseStage } from '../../../src/openai/parse.js'
import { TokenEstimator } from '../../../src/openai/token-estimator.js'
import { TenantDirectory } from '../../../src/tenants/directory.js'
import { Ticket } from '../../../src/ticket.js'
import { stageRequest } from '../../helpers/stage-request.js'
import { FakePool, fakeBackends } from '../admission/fake-pool.js'

const pool = new FakePool('main', ['m'])
const tokens = new TokenEstimator()
const deps = {
  backends: fakeBackends(pool),
  admission: new PassThrough(),
  tokens,
  clock: systemClock,
  defaultMaxTokens: 1024,
  classes: {},
  tenants: new TenantDirectory({ mode: 'api_key', header: 'x-tenant-id', anonymous: 'default' }, [], {}),
}
const parse = parseStage(deps)

const req = stageRequest

const chat = (extra: Record<string, unknown> = {}) => ({
  model: 'm',
  messages: [{ role: 'user', content: 'x'.repeat(400) }],
  ...extra,
})

describe('stage parse', () => {
  it('gives every route the same prompt estimate and the same default expected output', () => {
    const generation = req('/v1/chat/completions', chat())
    const embedding = req('/v1/embeddings', { model: 'm', input: 'x'.repeat(400) })
    expect(parse(generation)).toBeUndefined()
    expect(parse(embedding)).toBeUndefined()
    expect(generation.ticket.promptTokens).toBe(100 + 4) // 400 chars / 4 + one message's template
    expect(embedding.ticket.promptTokens).toBe(100)
    expect(generation.ticket.expectedOutputTokens).toBe(1024)
    expect(embedding.ticket.expectedOutputTokens).toBe(1024)
    expect(generation.ticket.generation).toBe(true)
    expect(embedding.ticket.generation).toBe(false)
    expect(generation.pool).toBe(pool)
    expect(generation.ticket.poolName).toBe('main')
  })

  it('uses the learned characters per token once usage has been reported', () => {
    const t = new Ticket('u', 'POST', '/v1/completions', 0)
    Object.assign(t, { model: 'learned', promptChars: 800, promptMessages: 0 })
    t.usage = { promptTokens: 100, completionTokens: 1 } // 8 characters per token
    for (let i = 0; i < 200; i++) tokens.ended(t)
    const r = req('/v1/completions', { model: 'learned', prompt: 'y'.repeat(800) })
    parse(r)
    expect(r.ticket.promptTokens).toBe(100)
  })

  it('asks a streamed generation for usage, and says it did', () => {
    const r = req('/v1/chat/completions', chat({ stream: true }))
    parse(r)
    expect(r.body?.stream_options).toEqual({ include_usage: true })
    expect(r.ticket.usageAdded).toBe(true)
    const own = req('/v1/chat/completions', chat({ stream: true, stream_options: { include_usage: true } }))
    parse(own)
    expect(own.ticket.usageAdded).toBe(false)
  })

  it('refuses a body that is not an object, and a model nobody serves', () => {
    const arr = parse(req('/v1/chat/completions', [1, 2]))
    expect(arr instanceof GatewayError && arr.code).toBe('GW_ERR_INVALID_BODY')
    const onlyMain = parseStage({ ...deps, backends: { ...fakeBackends(pool), route: () => undefined } })
    const none = onlyMain(req('/v1/chat/completions', chat({ model: 'nope' })))
    expect(none instanceof GatewayError && none.code).toBe('GW_ERR_MODEL_NOT_FOUND')
  })
})
