/**
 * A doctor finding, and what every check sees. A check is a pure function of the config and
 * the engine facts (see findings/registry.ts); its findings carry the numbers behind them,
 * why they matter and the fix, so that `doctor --json` is the whole judgment.
 */
import type { GatewayConfig, PoolConfig } from '../config/schema.js'
import type { EngineFacts } from './engine-facts.js'
import type { StepCostModel } from './step-cost.js'
import type { TypicalLengths } from './workload-classes.js'

/** error: exit code 1 (a CI gate); warning: a risk to look at; info: what doctor could not check. */
export type Severity = 'error' | 'warning' | 'info'

export interface Finding {
  /** Stable identifier (docs/contract.md lists every one). */
  readonly id: string
  readonly severity: Severity
  /** The pool and class it is about, when it is about one. */
  readonly pool?: string
  readonly class?: string
  /** The config key to change, e.g. `classes.batch.max_kv_usage`. */
  readonly path: string
  /** One line: what is wrong, with its numbers. */
  readonly title: string
  /** The numbers behind it. */
  readonly numbers: Readonly<Record<string, number | string | boolean>>
  readonly why: string
  readonly fix: string
}

/** One pool as doctor judges it. */
export interface PoolSubject {
  readonly name: string
  /** `backends.pools[i]`, or `simulator` for the built-in simulator's pool. */
  readonly path: string
  readonly pool: PoolConfig
  readonly facts: EngineFacts
  readonly cost: StepCostModel
  /** Replicas known from the config (static endpoints, the simulator's replicas); 0: discovered. */
  readonly replicas: number
}

export interface DoctorOptions {
  /** One request may hold at most this share of an endpoint's KV cache (context-hog). */
  readonly maxRequestKvShare: number
}

export interface CheckContext {
  readonly config: GatewayConfig
  readonly pools: readonly PoolSubject[]
  /** Typical lengths per class (from --workload, else DEFAULT_TYPICAL). */
  typical(className: string): TypicalLengths
  readonly options: DoctorOptions
}

export type Check = (ctx: CheckContext) => Finding[]

/** Rounds for display and JSON: 3 significant decimals at most. */
export function round(x: number, digits = 2): number {
  const f = 10 ** digits
  return Math.round(x * f) / f
}
