// The load generator users will run (`slo-gateway bench`): streaming client timing and reports.
export {
  type ClosedLoopOptions,
  closedLoop,
  connect,
  type LoadResult,
  type OpenLoopOptions,
  openLoop,
  outcomes,
  type RequestRecord,
  type RequestSpec,
  send,
  succeeded,
} from './load-client.js'
export {
  fmt,
  fmtDelta,
  markdownTable,
  median,
  percentile,
  Report,
  ratio,
  type Summary,
  sorted,
  summarize,
} from './report.js'
export { SseSplitter } from './sse-split.js'
