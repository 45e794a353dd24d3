import type { SimEngine } from './engine.js'
import type { FaultSpec } from './fault-spec.js'
import type { MetricFormatName } from './metric-format.js'

export interface SimOptions {
  /** Profile name in config/sim-profiles/ or a path to a YAML file; default 'llama-3.1-8b-h100'. */
  profile?: string
  /** First port; 0 = an ephemeral port for each replica; default 8000. */
  port?: number
  /** Default '127.0.0.1'. */
  host?: string
  /** Default 1; replica i listens on port+i (or its own ephemeral port when port is 0). */
  replicas?: number
  /** Default 1; 4 = everything 4x slower in wall-clock time. */
  timeScale?: number
  /** /metrics dialect; default 'vllm'. */
  metricsFormat?: MetricFormatName
  /** Default 1. */
  seed?: number
  /** Served model name; default from the profile. */
  modelName?: string
  /** Initial faults (same shape as the POST /admin/faults body). */
  faults?: FaultSpec
}

export interface SimReplica {
  readonly name: string
  readonly url: string
  readonly port: number
  /** For tests: state inspection. */
  readonly engine: SimEngine
}

export interface SimHandle {
  readonly replicas: readonly SimReplica[]
  /** The served model name (the same on every replica). */
  readonly modelName: string
  close(): Promise<void>
}

export class SimOptionError extends Error {
  override readonly name = 'SimOptionError'
}
