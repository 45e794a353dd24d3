/**
 * The whole product in one process for integration tests: the gateway (real backends,
 * telemetry, admission) in front of the built-in simulator, time-scaled, on port 0.
 * SLOs and the estimator's priors are scaled with the simulator, so the test runs the
 * same workload as real time, only slower (the 2-core machine stays out of the way).
 */
import type { AddressInfo } from 'node:net'
import { configSchema } from '../../src/config/schema.js'
import { createLogger } from '../../src/logger.js'
import { createRuntime, type GatewayRuntime } from '../../src/runtime.js'
import { sleep } from './upstream.js'

export interface SimGateway {
  readonly runtime: GatewayRuntime
  readonly url: string
  readonly adminUrl: string
  readonly scale: number
  close(): Promise<void>
}

export async function startSimGateway(opts: {
  scale: number
  profile?: string
  replicas?: number
  raw?: Record<string, unknown>
  /** false: no estimator priors in the config (the engine facts are learned). Default true. */
  priors?: boolean
}): Promise<SimGateway> {
  const s = opts.scale
  const raw = opts.raw ?? {}
  const config = configSchema.parse({
    auth: { anonymous: 'default' },
    ...raw,
    server: { host: '127.0.0.1', admin_host: '127.0.0.1', port: 0, admin_port: 0 },
    log: { level: 'warn' },
    simulator: {
      enabled: true,
      profile: opts.profile ?? 'llama-3.1-8b-h100',
      replicas: opts.replicas ?? 1,
      time_scale: s,
    },
    classes: {
      interactive: { slo: { ttft_ms: 500 * s, tpot_ms: 50 * s }, max_queue_wait_ms: 5000 * s },
      ...(raw.classes as object),
    },
    admission: {
      ...(opts.priors === false ? {} : { estimator: { step_ms: 10 * s, prefill_tokens_per_s: 40_000 / s } }),
      itl_window_ms: 200 * s,
      probe_interval_ms: 2000 * s,
      ...(raw.admission as object),
    },
  })
  const runtime = await createRuntime(config, createLogger('warn'))
  const { app, admin } = runtime.apps
  await app.listen({ port: 0, host: '127.0.0.1' })
  await admin.listen({ port: 0, host: '127.0.0.1' })
  for (let i = 0; i < 200 && !runtime.apps.ready(); i++) await sleep(20)
  return {
    runtime,
    scale: s,
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    adminUrl: `http://127.0.0.1:${(admin.server.address() as AddressInfo).port}`,
    close: async () => {
      await app.close()
      await admin.close()
      await runtime.close()
    },
  }
}
