/**
 * The worker thread's side of sim-thread.ts: starts the simulator from workerData, posts where
 * its replicas listen, and closes them when told to, after which the thread ends by itself.
 */
import { parentPort, workerData } from 'node:worker_threads'
import type { SimOptions } from './sim-options.js'
import type { SimThreadMessage } from './sim-thread.js'
import { startSim } from './start-sim.js'

const port = parentPort
if (port === null) throw new Error('sim-thread-entry runs on a worker thread (sim-thread.ts)')
const post = (m: SimThreadMessage) => port.postMessage(m)

try {
  const sim = await startSim(workerData as SimOptions)
  port.on('message', (m) => {
    if (m !== 'close') return
    void sim.close().then(() => {
      post({ kind: 'closed' })
      port.close()
    })
  })
  post({
    kind: 'ready',
    modelName: sim.modelName,
    replicas: sim.replicas.map((r) => ({ name: r.name, url: r.url, port: r.port })),
  })
} catch (err) {
  const e = err instanceof Error ? err : new Error(String(err))
  post({ kind: 'failed', name: e.name, message: e.message })
  port.close()
}
