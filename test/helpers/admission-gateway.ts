/**
 * A gateway with admission on (real backends and scrapes, no telemetry) in front of given
 * upstream URLs, on port 0, for tests that need admission but script their own upstream.
 */
import type { AddressInfo } from 'node:net'
import { Registry } from 'prom-client'
import { request } from 'undici'
import { type AdmissionControl, createAdmission } from '../../src/admission/index.js'
import { type BackendsHandle, createBackends } from '../../src/backends/index.js'
import { systemClock } from '../../src/clock.js'
import { configSchema } from '../../src/config/schema.js'
import type { ExchangeObserver } from '../../src/exchange.js'
import { buildHttpApps, type HttpApps } from '../../src/http-apps.js'
import { createLogger } from '../../src/logger.js'
import { TokenEstimator } from '../../src/openai/token-estimator.js'
import type { Ticket } from '../../src/ticket.js'
import { sleep } from './upstream.js'

export interface AdmissionGateway {
  readonly apps: HttpApps
  readonly backends: BackendsHandle
  readonly admission: AdmissionControl
  readonly url: string
  /** Every ticket, as accounting saw it end. */
  readonly tickets: Ticket[]
  close(): Promise<void>
}

export async function startAdmissionGateway(opts: {
  endpoints: readonly string[]
  /** Extra keys of the pool. */
  pool?: Record<string, unknown>
  /** Extra config (classes, admission, upstream, ...). */
  raw?: Record<string, unknown>
  observers?: readonly ExchangeObserver[]
  /** Admission's warnings (startup-warnings.ts) go here. */
  warnings?: string[]
}): Promise<AdmissionGateway> {
  const config = configSchema.parse({
    auth: { anonymous: 'default' },
    ...opts.raw,
    server: { port: 0, admin_port: 0, host: '127.0.0.1', admin_host: '127.0.0.1' },
    backends: {
      pools: [{ name: 'p', models: ['*'], endpoints: opts.endpoints, scrape_interval_ms: 50, ...opts.pool }],
    },
    telemetry: { enabled: false },
  })
  const backends = createBackends(config, { clock: systemClock, registry: new Registry() })
  const tokens = new TokenEstimator()
  const warnings = opts.warnings
  const admission = createAdmission(
    config,
    backends,
    systemClock,
    tokens,
    warnings === undefined ? undefined : { warn: (_obj, msg) => warnings.push(msg ?? '') },
  )
  backends.onChange(() => admission.pumpAll())
  const tickets: Ticket[] = []
  const apps = buildHttpApps(config, {
    clock: systemClock,
    logger: createLogger('silent'),
    registry: new Registry(),
    backends,
    admission,
    tokens,
    observers: opts.observers ?? [],
    recorder: {
      record: (t) => {
        tickets.push(t)
      },
    },
  })
  backends.start()
  await apps.app.listen({ port: 0, host: '127.0.0.1' })
  for (let i = 0; i < 150 && !backends.ready(); i++) await sleep(20)
  return {
    apps,
    backends,
    admission,
    tickets,
    url: `http://127.0.0.1:${(apps.app.server.address() as AddressInfo).port}`,
    close: async () => {
      admission.close()
      await apps.app.close()
      await apps.admin.close()
      await backends.close()
    },
  }
}

/**
 * A streamed chat request of one short message through the gateway at `url`, read to its
 * end; `fields` adds to the body or replaces its fields (another model, max_tokens).
 */
export async function streamChat(
  url: string,
  fields: Record<string, unknown> = {},
): Promise<{ status: number; code?: string; text: string; predicted?: string }> {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
      ...fields,
    }),
  })
  const text = await res.body.text()
  const code =
    res.statusCode === 200 ? undefined : (JSON.parse(text) as { error: { code: string } }).error.code
  const predicted = res.headers['x-gateway-predicted-ttft-ms']
  return {
    status: res.statusCode,
    text,
    ...(code === undefined ? {} : { code }),
    ...(typeof predicted === 'string' ? { predicted } : {}),
  }
}
