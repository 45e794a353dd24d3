/**
 * Listeners (public, admin, and the probe thread's when server.probe_port is set) and graceful
 * shutdown.
 *
 * On SIGTERM/SIGINT: /readyz turns 503 and new requests get 503 at once; requests in
 * flight may finish within server.shutdown_grace_ms; then the listeners and the backend
 * pools close and the process exits 0 (1 when the grace period ran out).
 */
import { type AddressInfo, createServer } from 'node:net'
import type { GatewayConfig } from './config/schema.js'
import type { HttpApps } from './http-apps.js'
import { type ProbeThread, startProbeThread } from './probe-thread.js'

/** After the drain, how long connections get to close by themselves before they are cut. */
export const CLOSE_WAIT_MS = 1_000

/** A listener that cannot start, said in one line with the fix (the CLI prints it, exit 1). */
export class ListenError extends Error {
  override readonly name = 'ListenError'
}

type Which = 'public' | 'admin' | 'probe'

const FLAGS: Record<Which, string> = {
  public: '--port or SLO_GATEWAY_PORT',
  admin: '--admin-port or SLO_GATEWAY_ADMIN_PORT',
  probe: '--set server.probe_port=N',
}
const WHAT: Record<Which, string> = { public: 'port', admin: 'admin port', probe: 'probe port' }

function listenError(err: unknown, which: Which, host: string, port: number): Error {
  const code = (err as NodeJS.ErrnoException | null)?.code
  const what = WHAT[which]
  if (code === 'EADDRINUSE') return new ListenError(`${what} ${port} is in use: use ${FLAGS[which]}`)
  if (code === 'EACCES')
    return new ListenError(
      `${what} ${port} needs privileges to listen on: use a port above 1023 (${FLAGS[which]})`,
    )
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new ListenError(
      `cannot listen on ${host}:${port}: ${host} is not an address of this machine (server.${which === 'public' ? 'host' : 'admin_host'})`,
    )
  return err instanceof Error ? err : new Error(String(err))
}

function probe(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve()))
  })
}

/**
 * Checks that both ports can be listened on, before anything else starts (the built-in
 * simulator): throws a ListenError naming the port and the flag to change it. Port 0 always can.
 */
export async function checkPorts(server: GatewayConfig['server']): Promise<void> {
  const ports: [Which, string, number][] = [
    ['public', server.host, server.port],
    ['admin', server.admin_host, server.admin_port],
  ]
  if (server.probe_port !== undefined) ports.push(['probe', server.admin_host, server.probe_port])
  for (const [which, host, port] of ports) {
    if (port === 0) continue
    try {
      await probe(host, port)
    } catch (err) {
      throw listenError(err, which, host, port)
    }
  }
}

export interface Listening {
  readonly apps: HttpApps
  readonly port: number
  readonly adminPort: number
  /** The probe listener's port (server.probe_port); undefined when there is none. */
  readonly probePort: number | undefined
  /** Drain, wait for in-flight requests up to the grace period, close. True when all finished. */
  shutdown(): Promise<boolean>
}

export interface ListenOptions {
  /** Called after the listeners have closed (close pools, simulator, timers). */
  readonly onClose?: () => Promise<void>
}

export async function listen(apps: HttpApps, opts: ListenOptions = {}): Promise<Listening> {
  const { server } = apps.config
  try {
    await apps.app.listen({ host: server.host, port: server.port })
  } catch (err) {
    throw listenError(err, 'public', server.host, server.port)
  }
  try {
    await apps.admin.listen({ host: server.admin_host, port: server.admin_port })
  } catch (err) {
    await apps.app.close()
    throw listenError(err, 'admin', server.admin_host, server.admin_port)
  }
  let probes: ProbeThread | undefined
  if (server.probe_port !== undefined) {
    try {
      probes = await startProbeThread(
        { host: server.admin_host, port: server.probe_port, stallMs: server.probe_stall_ms },
        {
          ready: () => apps.ready(),
          draining: () => apps.pipeline.draining,
          lagMs: () => apps.eventLoopLagMs(),
        },
      )
    } catch (err) {
      await apps.app.close()
      await apps.admin.close()
      throw listenError(err, 'probe', server.admin_host, server.probe_port)
    }
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
        // each one still open ends with GW_ERR_DRAINING (a stream: its final error event)
        await apps.pipeline.stopAll()
        apps.app.server.closeAllConnections()
      }
      // Nothing is in flight now, but a client may hold a connection with a request half
      // sent (or never used): Node does not count it idle, and close() would wait for its
      // request timeout. A moment for clean closes, then every connection goes.
      const reap = setTimeout(() => apps.app.server.closeAllConnections(), CLOSE_WAIT_MS)
      await apps.app.close()
      clearTimeout(reap)
      await apps.admin.close()
      await probes?.close()
      await opts.onClose?.()
      return finished
    })()
    return closing
  }
  return {
    apps,
    port: (apps.app.server.address() as AddressInfo).port,
    adminPort: (apps.admin.server.address() as AddressInfo).port,
    probePort: probes?.port,
    shutdown,
  }
}
