import { describe, expect, it } from 'vitest'
import { METRICS } from '../../../src/telemetry/index.js'
import { samples, setup, ticket, value } from './fixtures.js'

describe('bounded labels and scrape-time gauges', () => {
  it('caps model names from clients, maps unknown classes to other and a missing model to none', async () => {
    const { registry, telemetry } = setup()
    for (let i = 0; i < 40; i++) telemetry.record(ticket(0, { model: `made-up-${i}`, outcome: 'invalid' }))
    telemetry.record(ticket(0, { class: 'platinum', outcome: 'invalid' }))
    const t = ticket(0, { outcome: 'invalid' })
    t.model = undefined
    telemetry.record(t)
    const models = new Set((await samples(registry, METRICS.requests)).map((s) => s.labels.model))
    expect(models.size).toBeLessThanOrEqual(1 + 16 + 2) // configured + extra + other/none
    expect(models.has('other')).toBe(true)
    expect(models.has('none')).toBe(true)
    expect(await value(registry, METRICS.requests, { class: 'other' })).toBe(1)
    expect(await value(registry, METRICS.requests)).toBe(42)
    telemetry.close()
  })

  it('reads queue depth and in-flight from the source at scrape time', async () => {
    const { registry, telemetry } = setup()
    let queued = 3
    telemetry.setQueueSource(() => [
      { class: 'interactive', pool: 'main', queued, inflight: 2, ttftMargin: 0.14, tpotMargin: 0.12 },
      { class: 'batch', pool: 'main', queued: 50, inflight: 7 },
    ])
    expect(await value(registry, METRICS.queueDepth, { class: 'interactive' })).toBe(3)
    expect(await value(registry, METRICS.ttftMargin, { class: 'interactive', pool: 'main' })).toBe(0.14)
    expect(await samples(registry, METRICS.ttftMargin)).toHaveLength(1) // batch has none
    expect(await value(registry, METRICS.tpotMargin, { class: 'interactive', pool: 'main' })).toBe(0.12)
    expect(await samples(registry, METRICS.tpotMargin)).toHaveLength(1)
    expect(await value(registry, METRICS.inflight, { class: 'batch' })).toBe(7)
    queued = 0
    expect(await value(registry, METRICS.queueDepth, { class: 'interactive' })).toBe(0)
    telemetry.close()
  })

  it('still answers a scrape when the queue source throws', async () => {
    const { registry, telemetry } = setup()
    telemetry.setQueueSource(() => {
      throw new Error('boom')
    })
    const text = await registry.metrics()
    expect(text).toContain('# TYPE slo_gateway_requests_total counter')
    expect(await value(registry, METRICS.queueDepth)).toBe(0)
    telemetry.close()
  })

  it('counts HTTP requests of every route with a duration histogram', async () => {
    const { registry, telemetry } = setup()
    telemetry.observeHttp('/healthz', 'get', 200, 0.001)
    telemetry.observeHttp('/v1/chat/completions', 'POST', 503, 0.02)
    telemetry.observeHttp('/v1/chat/completions', 'POST', 200, 1.5)
    expect(
      await value(registry, METRICS.httpRequests, { route: '/healthz', method: 'GET', status: '200' }),
    ).toBe(1)
    expect(await value(registry, METRICS.httpRequests, { route: '/v1/chat/completions' })).toBe(2)
    expect(await value(registry, `${METRICS.httpDuration}_count`, { route: '/v1/chat/completions' })).toBe(2)
    telemetry.close()
  })

  it('exports each class SLO threshold in seconds', async () => {
    const { registry, telemetry } = setup()
    expect(await value(registry, METRICS.sloThreshold, { class: 'interactive', slo: 'ttft' })).toBe(0.5)
    expect(await value(registry, METRICS.sloThreshold, { class: 'interactive', slo: 'tpot' })).toBe(0.05)
    expect(await value(registry, METRICS.sloThreshold, { class: 'batch', slo: 'e2e' })).toBe(1800)
    telemetry.close()
  })
})
