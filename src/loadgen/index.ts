// The load generator users run (`slo-gateway bench`), and the parts the project's benchmarks
// in bench/ reuse: workloads, arrivals, the streaming client's timing, summaries and reports.
export { type ArrivalSpec, arrivalGaps, gammaDraw } from './arrivals.js'
export { BENCH_USAGE, type BenchOptions, parseBenchArgs, splitTarget } from './bench-args.js'
export { runBenchCommand } from './bench-command.js'
export { benchMarkdown, type RunInfo } from './bench-markdown.js'
export { type BenchRecord, type LoopMode, type RunResult, runBench } from './bench-run.js'
export { BenchError, BenchSession, type Level, type LevelRun, type SessionOptions } from './bench-session.js'
export { type BenchSummary, isGood, outcomeOf, reasonOf, summarizeRun } from './bench-summary.js'
export { type CapacityResult, measureCapacity, type ProbeStep, rampCapacity } from './capacity-probe.js'
export { type FindMaxGoodputOptions, findMaxGoodput, type MaxGoodputResult } from './find-max-goodput.js'
export {
  type SearchOptions,
  type SearchResult,
  type SearchTrial,
  type StopReason,
  searchMaxRate,
} from './goodput-search.js'
export { lengthDraw } from './lengths.js'
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
export { judgedRow, type LevelPoint, LevelRunner } from './load-levels.js'
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
export { RequestBuilder } from './request-builder.js'
export { type PlannedRequest, RequestPlan } from './request-plan.js'
export { SseSplitter } from './sse-split.js'
export { type StreamRequest, type StreamTiming, streamRequest } from './stream-client.js'
export { ttftCdfSvg } from './ttft-cdf-svg.js'
export { type LoadedWorkload, loadWorkload, WorkloadError } from './workload-load.js'
export { type Workload, workloadSchema } from './workload-schema.js'
