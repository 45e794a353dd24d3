import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { PassThrough } from '../../../src/admission/index.js'
import { systemClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { buildHttpApps } from '../../../src/http-apps.js'
import { createLogger } from '../../../src/logger.js'
import { verdictOf } from '../../../src/telemetry/verdict.js'
import type { Ticket } from '../../../src/ticket.js'
import { FakePool, fakeBackends } from '../admission/fake-pool.js'

describe('a failure inside the gateway', () => {
  it('answers 500 GW_ERR_INTERNAL without the internal message, and counts as failed', async () => {
    const tickets: Ticket[] = []
    const broken = new PassThrough()
    broken.admit = () => {
      throw new Error('secret internal detail')
    }
    const apps = buildHttpApps(configSchema.parse({ auth: { anonymous: 'default' } }), {
      clock: systemClock,
      logger: createLogger('silent'),
      registry: new Registry(),
      backends: fakeBackends(new FakePool('main', ['m'])),
      admission: broken,
      recorder: {
        record: (t) => {
          tickets.push(t)
        },
      },
    })
    const res = await apps.app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
    })
    expect(res.statusCode).toBe(500)
    expect(res.json()).toMatchObject({ error: { code: 'GW_ERR_INTERNAL', type: 'server_error' } })
    expect(res.body).not.toContain('secret')
    expect(tickets).toHaveLength(1)
    const t = tickets[0]!
    expect(t.outcome).toBe('failed')
    // against availability: a failure of the service, not the client's bad input
    expect(verdictOf(t, undefined)).toEqual({ kind: 'failed', errorKind: 'internal' })
    expect(apps.pipeline.inFlight).toBe(0)
  })
})
