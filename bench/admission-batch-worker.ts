/**
 * The worker thread that sends a run's batch requests (admission-sender.ts says why): it says
 * it is ready, plays its schedule from the run's start (the parent's t0, as an epoch), tells its
 * progress every few seconds, and posts every outcome at the end.
 */
import { parentPort, workerData } from 'node:worker_threads'
import type { Outcome } from './admission-client.js'
import { playSchedule, type Scheduled, type SenderOptions } from './admission-sender.js'

export interface BatchWorkerData {
  /** This module's file URL (worker-boot.mjs loads it). */
  readonly entry: string
  readonly options: Omit<SenderOptions, 't0'>
  readonly schedule: readonly Scheduled[]
}

/** The parent's go, once the worker said it is ready: the run's start as an epoch (performance.timeOrigin + t0). */
export interface BatchWorkerStart {
  readonly t0Epoch: number
}

export type BatchWorkerMessage =
  | { readonly kind: 'ready' }
  | { readonly kind: 'progress'; readonly sent: number; readonly ended: number }
  | {
      readonly kind: 'done'
      readonly outcomes: readonly { readonly seg: number; readonly outcome: Outcome }[]
      readonly lags: readonly { readonly seg: number; readonly lagMs: number }[]
    }

const PROGRESS_MS = 5_000

const d = workerData as BatchWorkerData
const port = parentPort
if (port === null) throw new Error('admission-batch-worker runs in a worker thread')
const { t0Epoch } = await new Promise<BatchWorkerStart>((resolve) => {
  port.once('message', resolve)
  port.postMessage({ kind: 'ready' } satisfies BatchWorkerMessage)
})
const outcomes: { seg: number; outcome: Outcome }[] = []
const lags: { seg: number; lagMs: number }[] = []
let ended = 0
const progress = setInterval(() => {
  port.postMessage({ kind: 'progress', sent: lags.length, ended } satisfies BatchWorkerMessage)
}, PROGRESS_MS)
await playSchedule(
  { ...d.options, t0: t0Epoch - performance.timeOrigin },
  d.schedule,
  ({ seg, lagMs, outcome }) => {
    lags.push({ seg, lagMs })
    void outcome.then((o) => {
      outcomes.push({ seg, outcome: o })
      ended++
    })
  },
)
clearInterval(progress)
port.postMessage({ kind: 'done', outcomes, lags } satisfies BatchWorkerMessage)
