/**
 * What a request is predicted to miss, were it admitted as it is now: the objectives its
 * class and tenant set, each predicted from what drives it. The degrade ladder (ladder.ts)
 * is walked while something is threatened, and each step is tried only where it helps.
 *
 * - `ttft`: its predicted TTFT (queue + server) is over its admission budget (the objective
 *   less the class's margin).
 * - `kv`: no endpoint has KV room for its need (prompt + choices × output) under its
 *   class's limit: it must wait for the cache, not for the queue.
 * - `tpot`: the decode step it is predicted to stream at (the endpoints' live step, else
 *   the step fact) is over its TPOT objective less the margin, or its KV need is more than
 *   every endpoint's free cache: the engine would preempt a stream before it ends (vLLM
 *   recomputes it), and that stream's TPOT is lost.
 * - `e2e`: TTFT + (output tokens − 1) × that step is over its E2E objective less the margin.
 *
 * Pure: the prediction's parts come in, the threats go out.
 */
export type Threat = 'ttft' | 'kv' | 'tpot' | 'e2e'

export interface ForecastInput {
  /** Predicted TTFT, ms, and the budget it is admitted within. */
  readonly ttftMs: number
  readonly ttftBudgetMs: number
  /** No endpoint has KV room for it under its class's limit. */
  readonly kvBlocked: boolean
  /** Its KV need is more than every endpoint's free cache (it would be preempted). */
  readonly kvOvercommit: boolean
  /** The decode step it is predicted to stream at, ms. */
  readonly stepMs: number
  /** Output tokens reserved for it (max_tokens, or the default). */
  readonly outputTokens: number
  readonly tpotMs?: number | undefined
  readonly e2eMs?: number | undefined
  /** The class's margin (0..1). */
  readonly margin: number
}

export interface Forecast {
  readonly threats: ReadonlySet<Threat>
  /** Predicted TPOT (the decode step), ms; Infinity when it would be preempted. */
  readonly tpotMs: number
  /** Predicted E2E, ms. */
  readonly e2eMs: number
}

export function forecast(f: ForecastInput): Forecast {
  const threats = new Set<Threat>()
  if (f.ttftMs > f.ttftBudgetMs) threats.add('ttft')
  if (f.kvBlocked) threats.add('kv')
  const tpot = f.kvOvercommit ? Number.POSITIVE_INFINITY : f.stepMs
  if (f.tpotMs !== undefined && tpot > f.tpotMs * (1 - f.margin)) threats.add('tpot')
  const e2e = f.ttftMs + Math.max(0, f.outputTokens - 1) * f.stepMs
  if (f.e2eMs !== undefined && e2e > f.e2eMs * (1 - f.margin)) threats.add('e2e')
  return { threats, tpotMs: tpot, e2eMs: e2e }
}
