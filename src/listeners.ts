/**
 * Listeners (public + admin) and graceful shutdown.
 *
 * On SIGTERM/SIGINT: /readyz turns 503 and new requests get 503 at once; requests in
 * flight may finish within server.shutdown_grace_ms; then the listeners and the backend
 * pools close and the process exits 0 (1 when the grace period ran out).
 */
import type { AddressInfo } from 'node:net'
import type { Gateway } from './app.js'

export interface Listening {
  readonly gateway: Gateway
  readonly port: number
  readonly adminPort: number
  /** Drain, wait for in-flight requests up to the grace period, close. True when all finished. */
  shutdown(): Promise<boolean>
}

export interface ListenOptions {
  /** Called after the listeners have closed (close pools, simulator, timers). */
  readonly onClose?: () => Promise<void>
}

export async function listen(gateway: Gateway, opts: ListenOptions = {}): Promise<Listening> {
  const { server } = gateway.config
  await gateway.app.listen({ host: server.host, port: server.port })
  try {
    await gateway.admin.listen({ host: server.admin_host, port: server.admin_port })
  } catch (err) {
    await gateway.app.close()
    throw err
  }
  let closing: Promise<boolean> | undefined
  const shutdown = (): Promise<boolean> => {
    closing ??= (async () => {
      gateway.drain()
      const grace = server.shutdown_grace_ms
      let timer: NodeJS.Timeout | undefined
      const finished = await Promise.race([
        gateway.whenIdle().then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), grace)
        }),
      ])
      clearTimeout(timer)
      if (!finished) {
        gateway.app.log.warn(
          { inflight: gateway.handlers.inFlight },
          'grace period over; closing with requests in flight',
        )
        gateway.app.server.closeAllConnections()
      }
      await gateway.app.close()
      await gateway.admin.close()
      await opts.onClose?.()
      return finished
    })()
    return closing
  }
  return {
    gateway,
    port: (gateway.app.server.address() as AddressInfo).port,
    adminPort: (gateway.admin.server.address() as AddressInfo).port,
    shutdown,
  }
}
