/**
 * Engine metric adapters by engine name (the `engine` key of a pool). Adding an engine:
 * one adapter file and one line here; the `satisfies` makes a missing one a type error.
 */
import type { EngineName } from '../../config/schema.js'
import type { MetricAdapter } from '../types.js'
import { llamacppAdapter } from './llamacpp.js'
import { sglangAdapter } from './sglang.js'
import { tgiAdapter } from './tgi.js'
import { trtllmAdapter } from './trtllm.js'
import { vllmAdapter } from './vllm.js'
import { vllmV0Adapter } from './vllm-v0.js'

const ADAPTERS = {
  vllm: vllmAdapter,
  'vllm-v0': vllmV0Adapter,
  sglang: sglangAdapter,
  tgi: tgiAdapter,
  llamacpp: llamacppAdapter,
  trtllm: trtllmAdapter,
} as const satisfies Record<EngineName, MetricAdapter>

export function adapterFor(engine: EngineName): MetricAdapter {
  return ADAPTERS[engine]
}

export function adapterNames(): EngineName[] {
  return Object.keys(ADAPTERS) as EngineName[]
}
