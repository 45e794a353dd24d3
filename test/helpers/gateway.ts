/**
 * Starts a gateway on port 0 for integration tests, with logs captured as parsed lines.
 */
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { Registry } from 'prom-client'
import type { Backends } from '../../src/backends/types.js'
import { systemClock } from '../../src/clock.js'
import { configSchema, type GatewayConfig } from '../../src/config/schema.js'
import { buildHttpApps, type GatewayDeps, type HttpApps } from '../../src/http-apps.js'
import { createLogger } from '../../src/logger.js'
import type { RequestRecorder } from '../../src/proxy/account.js'
import type { Ticket } from '../../src/ticket.js'

export interface TestGateway {
  readonly gateway: HttpApps
  readonly url: string
  readonly adminUrl: string
  readonly logs: Record<string, unknown>[]
  readonly tickets: Ticket[]
  close(): Promise<void>
}

export async function startGateway(
  backends: Backends,
  raw: Record<string, unknown> = {},
  recorder?: RequestRecorder,
  /** Parts to use instead of the defaults (a spy limiter, a scripted admission, a state source). */
  extra: Pick<GatewayDeps, 'limiter' | 'admission' | 'state'> = {},
): Promise<TestGateway> {
  const config: GatewayConfig = configSchema.parse({
    auth: { anonymous: 'default' },
    ...raw,
    server: { port: 0, admin_port: 0, host: '127.0.0.1', admin_host: '127.0.0.1', ...(raw.server as object) },
  })
  const logs: Record<string, unknown>[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n'))
        if (line) logs.push(JSON.parse(line) as Record<string, unknown>)
      cb()
    },
  })
  const tickets: Ticket[] = []
  const gateway = buildHttpApps(config, {
    clock: systemClock,
    logger: createLogger('info', sink),
    registry: new Registry(),
    backends,
    recorder: recorder ?? { record: (t) => tickets.push(t) },
    ...extra,
  })
  await gateway.app.listen({ port: 0, host: '127.0.0.1' })
  await gateway.admin.listen({ port: 0, host: '127.0.0.1' })
  const port = (gateway.app.server.address() as AddressInfo).port
  const adminPort = (gateway.admin.server.address() as AddressInfo).port
  return {
    gateway,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    logs,
    tickets,
    close: async () => {
      await gateway.app.close()
      await gateway.admin.close()
      await backends.close()
    },
  }
}
