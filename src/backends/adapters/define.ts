/**
 * The one way adapters are built: a spec that reads fields out of parsed text, wrapped so
 * that the MetricAdapter contract holds whatever the spec does: `parse` never throws,
 * garbage or a missing waiting/running count gives undefined (the endpoint is then stale).
 */
import type { EngineName } from '../../config/schema.js'
import { type PromText, parsePromText } from '../prom-text.js'
import type { BackendLoad, LoadField, MetricAdapter } from '../types.js'
import { isGarbage } from './select.js'

/** What a spec reads; undefined = the text does not say. */
export interface LoadFields {
  waiting: number | undefined
  running: number | undefined
  kvUsage?: number | undefined
  kvCapacityTokens?: number | undefined
  blockSize?: number | undefined
  prefixCaching?: boolean | undefined
  preemptionsTotal?: number | undefined
  prefixCacheQueriesTotal?: number | undefined
  prefixCacheHitsTotal?: number | undefined
  prefillSecondsSum?: number | undefined
  prefillCount?: number | undefined
  promptTokensSum?: number | undefined
  largestStepTokens?: number | undefined
  stepCeilingTokens?: number | undefined
}

export interface AdapterSpec {
  readonly engine: EngineName
  /** Fields this engine's /metrics does not reliably give (the ledger stands in for them). */
  readonly unsupported: readonly LoadField[]
  /**
   * The engine's metric name prefix. An exposition with samples but none of this family is
   * another engine's (or another exporter's): undefined, whatever `read` would say.
   */
  readonly family: string
  /** Metric names the spec reads; every other sample line is skipped unparsed. */
  readonly metrics: readonly string[]
  /** Reads the fields from the parsed exposition. */
  read(text: PromText): LoadFields | undefined
  /**
   * Optional: reads a body that is not Prometheus text (trtllm-serve's JSON). Returns null
   * when the body is not in its format, so the Prometheus path runs.
   */
  readRaw?(body: string): LoadFields | undefined | null
}

function toLoad(f: LoadFields): BackendLoad | undefined {
  if (f.waiting === undefined || f.running === undefined) return undefined
  const load: BackendLoad = { waiting: f.waiting, running: f.running }
  if (f.kvUsage !== undefined) load.kvUsage = f.kvUsage
  if (f.kvCapacityTokens !== undefined) load.kvCapacityTokens = f.kvCapacityTokens
  if (f.blockSize !== undefined) load.blockSize = f.blockSize
  if (f.prefixCaching !== undefined) load.prefixCaching = f.prefixCaching
  if (f.preemptionsTotal !== undefined) load.preemptionsTotal = f.preemptionsTotal
  if (f.prefixCacheQueriesTotal !== undefined) load.prefixCacheQueriesTotal = f.prefixCacheQueriesTotal
  if (f.prefixCacheHitsTotal !== undefined) load.prefixCacheHitsTotal = f.prefixCacheHitsTotal
  if (f.prefillSecondsSum !== undefined) load.prefillSecondsSum = f.prefillSecondsSum
  if (f.prefillCount !== undefined) load.prefillCount = f.prefillCount
  if (f.promptTokensSum !== undefined) load.promptTokensSum = f.promptTokensSum
  if (f.largestStepTokens !== undefined) load.largestStepTokens = f.largestStepTokens
  if (f.stepCeilingTokens !== undefined) load.stepCeilingTokens = f.stepCeilingTokens
  return load
}

export function defineAdapter(spec: AdapterSpec): MetricAdapter {
  const wanted = new Set(spec.metrics)
  const filter = (name: string) => wanted.has(name)
  return {
    engine: spec.engine,
    unsupported: spec.unsupported,
    parse(text: string): BackendLoad | undefined {
      try {
        if (typeof text !== 'string') return undefined
        if (spec.readRaw !== undefined) {
          const raw = spec.readRaw(text)
          if (raw !== null) return raw === undefined ? undefined : toLoad(raw)
        }
        const parsed = parsePromText(text, filter)
        if (isGarbage(parsed)) return undefined
        if (parsed.sampleCount + parsed.skippedLines > 0 && !text.includes(spec.family)) return undefined
        const fields = spec.read(parsed)
        return fields === undefined ? undefined : toLoad(fields)
      } catch {
        return undefined
      }
    },
  }
}
