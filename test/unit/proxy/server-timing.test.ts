import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { PassThrough } from '../../../src/admission/index.js'
import type { Lease } from '../../../src/backends/types.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { GatewayError } from '../../../src/errors.js'
import { buildHttpApps } from '../../../src/http-apps.js'
import { createLogger } from '../../../src/logger.js'
import { FakePool, fakeBackends } from '../admission/fake-pool.js'

/**
 * A refusal says how long the gateway held the request (W3C Server-Timing, `gateway;dur=`): from
 * its whole body received to the answer, on the gateway's clock. A client that measures more
 * than this waited on the network or on an event loop, its own or the gateway's.
 */
describe('server-timing on a refusal', () => {
  const chat = { model: 'm', messages: [{ role: 'user', content: 'hi' }] }

  function gateway(admit: PassThrough['admit'], clock: ManualClock) {
    const admission = new PassThrough()
    admission.admit = admit
    return buildHttpApps(configSchema.parse({ auth: { anonymous: 'default' } }), {
      clock,
      logger: createLogger('silent'),
      registry: new Registry(),
      backends: fakeBackends(new FakePool('main', ['m'])),
      admission,
      recorder: { record: () => {} },
    })
  }

  it('is the time from arrival to the refusal: 0 on arrival, the wait when refused from the queue', async () => {
    const clock = new ManualClock(1_000)
    const full = new GatewayError('GW_ERR_QUEUE_FULL', {}, { retryAfterMs: 500 })
    const apps = gateway(() => full, clock)
    const now = await apps.app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat })
    expect(now.statusCode).toBe(503)
    expect(now.headers['server-timing']).toBe('gateway;dur=0.00')

    let shed: ((e: GatewayError) => void) | undefined
    const queued = gateway((ticket) => {
      ticket.queuedMs = 0
      return { lease: new Promise<Lease | GatewayError>((resolve) => (shed = resolve)), cancel: () => true }
    }, clock)
    const pending = queued.app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat })
    while (shed === undefined) await new Promise((r) => setImmediate(r))
    clock.advance(250.125)
    shed(new GatewayError('GW_ERR_QUEUE_TIMEOUT', {}, { retryAfterMs: 500 }))
    const later = await pending
    expect(later.statusCode).toBe(503)
    expect(later.headers['server-timing']).toBe('gateway;dur=250.13')
  })
})
