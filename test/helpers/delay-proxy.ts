/**
 * A TCP proxy that delays every chunk, both ways, by a delay the test changes as it runs:
 * a slow network or a slow server that still answers, in order. Each chunk goes on at
 * max(its arrival + delay, the previous chunk's departure), so bytes are never reordered.
 */
import { connect, createServer, type Server, type Socket } from 'node:net'

export interface DelayProxy {
  readonly port: number
  readonly url: string
  /** The delay each chunk gets from now on, ms. */
  delayMs: number
  close(): Promise<void>
}

export async function startDelayProxy(
  target: { host: string; port: number },
  scheme = 'redis',
): Promise<DelayProxy> {
  const sockets = new Set<Socket>()
  const proxy: { delayMs: number } = { delayMs: 0 }
  const pipe = (from: Socket, to: Socket) => {
    let last = 0
    from.on('data', (chunk) => {
      const at = Math.max(performance.now() + proxy.delayMs, last)
      last = at
      setTimeout(() => to.destroyed || to.write(chunk), Math.max(0, at - performance.now()))
    })
    from.on('close', () => setTimeout(() => to.destroy(), Math.max(0, last - performance.now())))
    from.on('error', () => {})
  }
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.setNoDelay(true)
      s.on('close', () => sockets.delete(s))
    }
    pipe(client, upstream)
    pipe(upstream, client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  return Object.assign(proxy, {
    port,
    url: `${scheme}://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  })
}
