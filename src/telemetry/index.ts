export { OTHER } from './bounded-label.js'
export { type CostShare, IDLE, type PoolCost } from './cost.js'
export {
  OUTPUT_LENGTH_BUCKETS,
  outputLengthBucket,
  PROMPT_LENGTH_BUCKETS,
  promptLengthBucket,
} from './length-buckets.js'
export {
  BACKEND_MODULE_METRICS,
  exportedSeriesNames,
  HISTOGRAMS,
  METRICS,
  RELOAD_MODULE_METRICS,
  TENANT_MODULE_METRICS,
} from './names.js'
export type { Quantiles, WindowName, WindowStats } from './rolling-windows.js'
export type { SummaryLine } from './summary.js'
export {
  createTelemetry,
  type QueueSample,
  type Telemetry,
  type TelemetryDeps,
  type TelemetryHistory,
  type TelemetryLogger,
} from './telemetry.js'
export {
  asVerdict,
  isClientErrorStatus,
  type Measurement,
  measure,
  nonStreamedE2eObjectiveS,
  type SloName,
  type Verdict,
  verdictOf,
} from './verdict.js'
