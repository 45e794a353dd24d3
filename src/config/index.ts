export { describeValue, formatIssues, formatPath } from './format-issues.js'
export {
  ConfigError,
  type ConfigOverrides,
  DEFAULT_CONFIG_FILE,
  type LoadedConfig,
  loadConfig,
} from './load.js'
export {
  configSchema,
  DEFAULTS,
  ENGINES,
  type EngineName,
  type GatewayConfig,
  type PoolConfig,
} from './schema.js'
