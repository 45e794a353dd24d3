/**
 * Real backends (createBackends) over given upstream URLs, started and waited on until an
 * endpoint has fresh load data, for proxy tests.
 */
import { Registry } from 'prom-client'
import { type BackendsHandle, createBackends } from '../../src/backends/index.js'
import { systemClock } from '../../src/clock.js'
import { configSchema } from '../../src/config/schema.js'
import { sleep } from './upstream.js'

/** The config for one pool `default` over `urls`, plus `raw` sections (e.g. upstream timeouts). */
export function poolConfig(
  urls: string[],
  raw: Record<string, unknown> = {},
  pool: Record<string, unknown> = {},
) {
  return { ...raw, backends: { pools: [{ name: 'default', models: ['*'], endpoints: urls, ...pool }] } }
}

export async function readyBackends(
  urls: string[],
  raw: Record<string, unknown> = {},
  pool: Record<string, unknown> = {},
): Promise<BackendsHandle> {
  const config = configSchema.parse(poolConfig(urls, raw, pool))
  const backends = createBackends(config, { clock: systemClock, registry: new Registry() })
  backends.start()
  for (let i = 0; i < 200 && !backends.ready(); i++) await sleep(10)
  if (!backends.ready() && urls.length > 0 && pool.fail_open !== true)
    throw new Error('backends never became ready')
  return backends
}

/** Requests in flight to every endpoint (the ledger), for leak checks. */
export function inflight(backends: BackendsHandle): number {
  let n = 0
  for (const pool of backends.pools())
    for (const ep of pool.allEndpoints()) n += ep.view().effective.inflightRequests
  return n
}
