/**
 * Listeners (public + admin) and graceful shutdown.
 *
 * On SIGTERM/SIGINT: /readyz turns 503 and new requests get 503 at once; requests in
 * flight may finish within server.shutdown_grace_ms; then the listeners and the backend
 * pools close and the process exits 0 (1 when the grace period ran out).
 */
import type { AddressInfo } from 'node:net'
import type { HttpApps } from './http-apps.js'

export interface Listening {
  readonly apps: HttpApps
  readonly port: number
  readonly adminPort: number
  /** Drain, wait for in-flight requests up to the grace period, close. True when all finished. */
  shutdown(): Promise<boolean>
}

export interface ListenOptions {
  /** Called after the listeners have closed (close pools, simulator, timers). */
  readonly onClose?: () => Promise<void>
}

export async function listen(apps: HttpApps, opts: ListenOptions = {}): Promise<Listening> {
  const { server } = apps.config
  await apps.app.listen({ host: server.host, port: server.port })
  try {
    await apps.admin.listen({ host: server.admin_host, port: server.admin_port })
  } catch (err) {
    await apps.app.close()
    throw err
  }
  let closing: Promise<boolean> | undefined
  const shutdown = (): Promise<boolean> => {
    closing ??= (async () => {
      apps.drain()
      const grace = server.shutdown_grace_ms
      let timer: NodeJS.Timeout | undefined
      const finished = await Promise.race([
        apps.whenIdle().then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), grace)
        }),
      ])
      clearTimeout(timer)
      if (!finished) {
        apps.app.log.warn(
          { inflight: apps.pipeline.inFlight },
          'grace period over; closing with requests in flight',
        )
        apps.app.server.closeAllConnections()
      }
      await apps.app.close()
      await apps.admin.close()
      await opts.onClose?.()
      return finished
    })()
    return closing
  }
  return {
    apps,
    port: (apps.app.server.address() as AddressInfo).port,
    adminPort: (apps.admin.server.address() as AddressInfo).port,
    shutdown,
  }
}
