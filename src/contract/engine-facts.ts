/**
 * What doctor and the contract know about one pool's engine, and where each fact comes from.
 *
 * Sources, best first: the servers themselves (their /metrics and /v1/models: `live`), the
 * pool's config (`capacity.kv_tokens`, `capacity.max_num_seqs`: `config`), and a simulator
 * profile that matches the pool's model or was named (`profile`). The step model (how long an
 * engine step takes for a batch) only ever comes from a profile; without one, the admission
 * estimator's priors (`admission.estimator.step_ms`, `prefill_tokens_per_s`) stand in.
 */
import type { SimProfile, StepTimeModel } from '../sim/profile-schema.js'

export type FactSource = 'live' | 'config' | 'profile' | 'priors'

export interface Fact<T> {
  readonly value: T
  /** Where it comes from, e.g. `live http://10.0.0.5:8000/metrics`, `profile llama-3.1-8b-h100`. */
  readonly source: string
}

/** The facts one endpoint's /metrics and /v1/models gave (read-facts.ts). */
export interface LiveFacts {
  readonly origin: string
  readonly kvCapacityTokens?: number
  readonly blockSize?: number
  readonly maxModelLen?: number
  readonly models?: readonly string[]
  /** A llama.cpp server's `total_slots` (its /props). */
  readonly maxNumSeqs?: number
}

export interface EngineFacts {
  readonly kvCapacityTokens?: Fact<number>
  readonly blockSize?: Fact<number>
  readonly maxNumSeqs?: Fact<number>
  readonly maxModelLen?: Fact<number>
  /** The engine's token budget per step (chunked prefill), from a profile. */
  readonly maxNumBatchedTokens?: Fact<number>
  readonly models?: Fact<readonly string[]>
  /** The step model, from a profile; absent: only the estimator's priors are known. */
  readonly stepTime?: Fact<StepTimeModel>
}

export interface PoolCapacityConfig {
  readonly max_num_seqs?: number | undefined
  readonly kv_tokens?: number | undefined
}

const fact = <T>(value: T | undefined, source: string): Fact<T> | undefined =>
  value === undefined ? undefined : { value, source }

/**
 * The facts of one pool: each field from the first source that has it (live, then config,
 * then the profile; max_num_seqs: config, then live, then the profile). `capacityPath` names the pool's capacity key in the config.
 */
export function mergeFacts(
  live: LiveFacts | undefined,
  capacity: PoolCapacityConfig,
  capacityPath: string,
  profile: SimProfile | undefined,
): EngineFacts {
  const l = live === undefined ? '' : `live ${live.origin}`
  const p = profile === undefined ? '' : `profile ${profile.name}`
  const pe = profile?.engine
  const out: Record<string, Fact<unknown> | undefined> = {
    kvCapacityTokens:
      fact(live?.kvCapacityTokens, `${l}/metrics`) ??
      fact(capacity.kv_tokens, `config ${capacityPath}.kv_tokens`) ??
      fact(pe === undefined ? undefined : pe.numGpuBlocks * pe.blockSize, p),
    blockSize: fact(live?.blockSize, `${l}/metrics`) ?? fact(pe?.blockSize, p),
    // the config first, as the gateway takes it (an operator's limit under the server's own)
    maxNumSeqs:
      fact(capacity.max_num_seqs, `config ${capacityPath}.max_num_seqs`) ??
      fact(live?.maxNumSeqs, `${l}/props`) ??
      fact(pe?.maxNumSeqs, p),
    maxModelLen: fact(live?.maxModelLen, `${l}/v1/models`) ?? fact(pe?.maxModelLen, p),
    maxNumBatchedTokens: fact(pe?.maxNumBatchedTokens, p),
    models:
      fact(live?.models, `${l}/v1/models`) ?? fact(profile === undefined ? undefined : [profile.model], p),
    stepTime: fact(profile?.stepTime, p),
  }
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k]
  return out as EngineFacts
}

/** The facts as JSON: `{ field: { value, source } }`, fields in a fixed order. */
export function factsJson(f: EngineFacts): Record<string, { value: unknown; source: string }> {
  const order = [
    'kvCapacityTokens',
    'blockSize',
    'maxNumSeqs',
    'maxModelLen',
    'maxNumBatchedTokens',
    'models',
    'stepTime',
  ] as const
  const out: Record<string, { value: unknown; source: string }> = {}
  for (const k of order) {
    const v = f[k]
    if (v !== undefined) out[k] = { value: v.value, source: v.source }
  }
  return out
}
