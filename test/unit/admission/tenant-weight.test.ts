import { describe, expect, it } from 'vitest'
import { Admission } from '../../../src/admission/admission.js'
import { isQueued } from '../../../src/admission/face.js'
import type { Lease } from '../../../src/backends/types.js'
import { systemClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { GatewayError } from '../../../src/errors.js'
import { Ticket } from '../../../src/ticket.js'
import { FakePool, fakeBackends } from './fake-pool.js'

const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

/** A ticket as identify and parse leave it: the tenant's weight on it, its prompt counted. */
function ticket(id: string, tenant: string, weight: number, prompt: number): Ticket {
  const t = new Ticket(id, 'POST', '/v1/chat/completions', systemClock.now())
  t.generation = true
  t.model = 'm'
  t.tenant = tenant
  t.tenantWeight = weight
  t.requestedClass = 'batch'
  t.promptTokens = prompt
  t.expectedOutputTokens = 16
  t.bodyBytes = 200
  return t
}

describe('tenant weights reach the fair queue', () => {
  it('two backlogged tenants of weights 1 and 3 get prompt tokens dispatched within 10% of 1:3', async () => {
    const config = configSchema.parse({
      backends: { pools: [{ name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] }] },
    })
    const pool = new FakePool('main', ['m'])
    pool.slots = 1
    const admission = new Admission(config, fakeBackends(pool), systemClock)
    const running: { t: Ticket; lease: Lease }[] = []
    const served: Ticket[] = []
    const admit = (t: Ticket) => {
      const a = admission.admit(t, { model: 'm', messages: [] }, pool)
      if (a instanceof GatewayError) throw a
      const granted = (lease: Lease) => {
        served.push(t)
        running.push({ t, lease })
      }
      if (isQueued(a)) void a.lease.then((l) => (l instanceof GatewayError ? undefined : granted(l)))
      else granted(a)
    }
    // tenant a sends long prompts, b short ones: the share is in tokens, not requests
    for (let i = 0; i < 1200; i++) {
      admit(ticket(`a${i}`, 'a', 1, 300))
      admit(ticket(`b${i}`, 'b', 3, 100))
    }
    await flush()
    while (served.length < 1001) {
      const r = running.shift()
      if (r === undefined) throw new Error('nothing running')
      r.lease.ended(r.t, 'ok')
      await flush()
    }
    const counted = served.slice(1, 1001) // the first went at once, before both were queued
    const tokens = (tenant: string) =>
      counted.filter((t) => t.tenant === tenant).reduce((n, t) => n + t.promptTokens, 0)
    const a = tokens('a')
    const b = tokens('b')
    expect(counted.filter((t) => t.tenant === 'b').length).toBeLessThan(1200) // b stayed backlogged
    expect(b / a).toBeGreaterThan(3 * 0.9)
    expect(b / a).toBeLessThan(3 * 1.1)
    admission.close()
  })
})
