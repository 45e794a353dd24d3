/**
 * config/examples/two-models.yaml end to end, against two simulators that serve the real
 * model names (and, as vLLM does, answer 404 for any other name): a request for an alias
 * reaches the right pool with `model` rewritten to the name its servers serve, and the
 * response says which model served it.
 */
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { configSchema } from '../../../src/config/schema.js'
import { createLogger } from '../../../src/logger.js'
import { createRuntime, type GatewayRuntime } from '../../../src/runtime.js'
import { type SimHandle, startSim } from '../../../src/sim/index.js'
import { sleep } from '../../helpers/upstream.js'

const BIG = 'meta-llama/Llama-3.1-70B-Instruct'
const SMALL = 'meta-llama/Llama-3.1-8B-Instruct'

let sims: SimHandle[] = []
let runtime: GatewayRuntime | undefined
let url = ''

beforeAll(async () => {
  sims = [
    await startSim({ replicas: 1, port: 0, profile: 'tiny', host: '127.0.0.1', modelName: BIG }),
    await startSim({ replicas: 1, port: 0, profile: 'tiny', host: '127.0.0.1', modelName: SMALL }),
  ]
  const raw = parse(
    readFileSync(join(import.meta.dirname, '../../../config/examples/two-models.yaml'), 'utf8'),
  )
  // the example's servers, replaced by the simulators (and DNS discovery by a static list)
  raw.server = { port: 0, admin_port: 0, host: '127.0.0.1', admin_host: '127.0.0.1' }
  raw.log = { level: 'warn' }
  raw.auth = { anonymous: 'default' }
  for (const [i, pool] of (raw.backends.pools as Record<string, unknown>[]).entries()) {
    delete pool.discovery
    pool.endpoints = sims[i]!.replicas.map((r) => r.url)
  }
  runtime = await createRuntime(configSchema.parse(raw), createLogger('warn'))
  await runtime.apps.app.listen({ port: 0, host: '127.0.0.1' })
  url = `http://127.0.0.1:${(runtime.apps.app.server.address() as AddressInfo).port}`
  for (let i = 0; i < 200 && !runtime.apps.ready(); i++) await sleep(20)
})

afterAll(async () => {
  await runtime?.apps.app.close()
  await runtime?.close()
  await Promise.all(sims.map((s) => s.close()))
})

async function chat(model: string, stream = false) {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }),
  })
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() }
}

describe('model aliases (two-models.yaml)', () => {
  it('sends an alias upstream as the name the pool serves; the response names it', async () => {
    for (const [alias, real] of [
      ['llama-70b', BIG],
      ['llama-8b', SMALL],
    ] as const) {
      const r = await chat(alias)
      expect(r.status, r.text).toBe(200)
      expect((JSON.parse(r.text) as { model: string }).model).toBe(real)
      expect(r.headers['x-gateway-model']).toBe(real)
    }
    const streamed = await chat('llama-70b', true)
    expect(streamed.status).toBe(200)
    expect(streamed.text).toContain(`"model":"${BIG}"`)
  })

  it('sends a real model name as it is, and refuses a name no pool serves', async () => {
    const r = await chat(SMALL)
    expect(r.status).toBe(200)
    expect((JSON.parse(r.text) as { model: string }).model).toBe(SMALL)
    expect(r.headers['x-gateway-model']).toBeUndefined()
    const unknown = await chat('llama-405b')
    expect(unknown.status).toBe(404)
    expect(unknown.text).toContain('GW_ERR_MODEL_NOT_FOUND')
  })

  it('lists the aliases beside the real names in /v1/models', async () => {
    const res = await request(`${url}/v1/models`)
    const ids = ((await res.body.json()) as { data: { id: string }[] }).data.map((m) => m.id)
    expect(ids).toEqual(expect.arrayContaining([BIG, SMALL, 'llama-70b', 'llama-8b']))
  })
})
