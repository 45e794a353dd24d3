/**
 * A real redis-server for the limiter's integration tests: a child process on a free
 * loopback port, nothing persisted, that a test can stop (SIGKILL, as a crash) and start
 * again on the same port. `npm test` installs redis-server when missing
 * (scripts/test-prereqs.mjs).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createServer } from 'node:net'

export interface RedisServer {
  readonly port: number
  readonly url: string
  /** Kills the server (SIGKILL) and waits until it has exited. */
  stop(): Promise<void>
  /** Starts it again on the same port; resolves when it accepts connections. */
  start(): Promise<void>
  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered, as a wedged Redis. */
  pause(): void
  /** Thaws it (SIGCONT); it answers what it was sent meanwhile. */
  resume(): void
}

/** Servers still running, killed if the test process exits without stopping them. */
const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL')
})

/** A loopback port nothing listens on (free a moment ago). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })
}

function spawnRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  return new Promise((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`redis-server on port ${port} not ready after 10 s:\n${out}`))
    }, 10_000)
    const onData = (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer)
        child.stdout?.off('data', onData)
        child.stdout?.resume()
        running.add(child)
        child.once('exit', () => running.delete(child))
        resolve(child)
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', (c: Buffer) => {
      out += c.toString()
    })
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      // after it was ready, an exit is the test's own stop(); reject is then a no-op
      reject(new Error(`redis-server exited (${code}) before it was ready:\n${out}`))
    })
  })
}

function kill(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once('exit', () => resolve())
    child.kill('SIGKILL')
    child.kill('SIGCONT')
  })
}

/** Starts redis-server on a free port. Call `stop()` in afterAll. */
export async function startRedis(): Promise<RedisServer> {
  const port = await freePort()
  let child: ChildProcess | undefined = await spawnRedis(port)
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      const c = child
      child = undefined
      await kill(c)
    },
    async start() {
      if (child !== undefined) return
      child = await spawnRedis(port)
    },
    pause() {
      child?.kill('SIGSTOP')
    },
    resume() {
      child?.kill('SIGCONT')
    },
  }
}
