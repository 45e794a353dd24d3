export { ManualClock, systemClock as realClock, type TimerClock as Clock } from '../clock.js'
export { runSimCli } from './cli.js'
export { SimEngine } from './engine.js'
export { EngineLoop } from './engine-loop.js'
export type { FaultSpec } from './fault-spec.js'
export { parseFaultSpec } from './fault-spec.js'
export type { MetricFormat, MetricFormatName, MetricsView } from './metric-format.js'
export { METRIC_FORMAT_NAMES } from './metric-format.js'
export { getMetricFormat } from './metric-format-registry.js'
export { loadProfile, PROFILES_DIR } from './profile-loader.js'
export type { SimProfile } from './profile-schema.js'
export {
  CHARS_PER_TOKEN,
  chatPromptTokens,
  completionPromptTokens,
  TOKENS_PER_MESSAGE,
} from './prompt-tokens.js'
export type { SimHandle, SimOptions, SimReplica } from './sim-options.js'
export { SimOptionError } from './sim-options.js'
export { SimRequest } from './sim-request.js'
export { startSim } from './start-sim.js'
