// Starts a bench worker thread written in TypeScript: a worker does not inherit the tsx loader of
// the thread that started it, so it loads its entry (workerData.entry, a file URL) through tsx.
import { workerData } from 'node:worker_threads'
import { tsImport } from 'tsx/esm/api'

await tsImport(workerData.entry, import.meta.url)
