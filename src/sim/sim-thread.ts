/**
 * The built-in simulator on a worker thread of its own (`simulator.enabled`, `npm start`).
 *
 * In the gateway's event loop the simulator's engine steps waited behind the gateway's work:
 * under load a step ran late by as long as the gateway took to relay the last one's tokens,
 * so the simulated server was slower than its profile, and the gateway's TTFT predictions,
 * right for the profile, looked wrong at the client. A model server never shares the
 * gateway's loop; on a thread of its own, the simulator keeps its time (the second core
 * runs it) and the gateway's loop serves only the gateway. The two still talk HTTP over
 * loopback, as with a real server.
 *
 * The worker runs sim-thread-entry: from dist (.js) directly; from src (tsx, vitest) through
 * tsx's loader, registered in the worker first (on Node 20 a worker does not inherit it).
 */
import { Worker } from 'node:worker_threads'
import { SimOptionError, type SimOptions } from './sim-options.js'

/** A replica as the gateway sees it: a name and where it listens. */
export interface SimThreadReplica {
  readonly name: string
  readonly url: string
  readonly port: number
}

export interface SimThread {
  readonly replicas: readonly SimThreadReplica[]
  readonly modelName: string
  close(): Promise<void>
}

/** What the worker posts: once started (or failed), and once closed. */
export type SimThreadMessage =
  | { readonly kind: 'ready'; readonly replicas: SimThreadReplica[]; readonly modelName: string }
  | { readonly kind: 'failed'; readonly name: string; readonly message: string }
  | { readonly kind: 'closed' }

/** How long the simulator's servers get to close before its thread is ended anyway. */
const CLOSE_TIMEOUT_MS = 5_000

function spawn(opts: SimOptions): Worker {
  const fromSource = import.meta.url.endsWith('.ts')
  const entry = new URL(fromSource ? './sim-thread-entry.ts' : './sim-thread-entry.js', import.meta.url)
  if (!fromSource) return new Worker(entry, { workerData: opts })
  const tsx = import.meta.resolve('tsx/esm/api')
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}) })`
  return new Worker(code, { eval: true, workerData: opts })
}

/** The worker's error on this side, by the name the CLI tells errors apart by (ProfileError: exit 1 with its message). */
function rebuilt(name: string, message: string): Error {
  if (name === 'SimOptionError') return new SimOptionError(message)
  const err = new Error(message)
  err.name = name
  return err
}

/**
 * Starts the simulator's replicas on a worker thread; resolves once they listen. Bad options
 * reject with SimOptionError, as startSim's do. `onExit` is told if the thread ends on its own
 * (an uncaught error in the simulator): its servers are gone with it, and the gateway's
 * scrapes and breakers see that as they would a server's crash.
 */
export function startSimThread(
  opts: SimOptions,
  onExit: (err: Error) => void = () => {},
): Promise<SimThread> {
  const worker = spawn(opts)
  let closing = false
  return new Promise<SimThread>((resolve, reject) => {
    let lastError: Error | undefined
    worker.on('error', (err) => {
      lastError = err
    })
    const exitedEarly = (code: number) =>
      reject(lastError ?? new Error(`the simulator's thread exited (${code}) before it started`))
    worker.once('exit', exitedEarly)
    worker.once('message', (m: SimThreadMessage) => {
      worker.off('exit', exitedEarly)
      if (m.kind !== 'ready') {
        void worker.terminate()
        reject(m.kind === 'failed' ? rebuilt(m.name, m.message) : new Error('the simulator did not start'))
        return
      }
      let exited = false
      worker.once('exit', (code) => {
        exited = true
        if (!closing) onExit(lastError ?? new Error(`the simulator's thread exited (${code})`))
      })
      let closed: Promise<void> | undefined
      resolve({
        replicas: m.replicas,
        modelName: m.modelName,
        close: () => {
          closing = true
          if (exited) return Promise.resolve()
          // the servers close their connections first ('closed'), then the thread is ended
          closed ??= new Promise<void>((done) => {
            const end = () => void worker.terminate().then(() => done())
            const timer = setTimeout(end, CLOSE_TIMEOUT_MS)
            worker.once('message', () => {
              clearTimeout(timer)
              end()
            })
            worker.once('exit', () => {
              clearTimeout(timer)
              done()
            })
            worker.postMessage('close')
          })
          return closed
        },
      })
    })
  })
}
