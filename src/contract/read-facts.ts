/**
 * Reads an endpoint's engine facts over HTTP: its /metrics (through the pool's engine
 * adapter: KV capacity and block size, e.g. vLLM's `cache_config_info`), its `/v1/models`
 * (the served models and, where the engine says, `max_model_len`) and, for llama.cpp, its
 * `/props` (`total_slots`, as the gateway reads it: src/backends/engine-info.ts). A server
 * that does not answer within the timeout gives the reason instead.
 */
import { request } from 'undici'
import { adapterFor } from '../backends/adapters/registry.js'
import { slotsFromPropsText } from '../backends/engine-info.js'
import type { EngineName } from '../config/schema.js'
import { isRecord } from '../is-record.js'
import type { LiveFacts } from './engine-facts.js'

export type ReadResult = { ok: true; facts: LiveFacts } | { ok: false; origin: string; reason: string }

async function getText(url: string, timeoutMs: number): Promise<string> {
  const res = await request(url, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
  const text = await res.body.text()
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`)
  return text
}

/** max_model_len and the model ids of an OpenAI-style model list (vLLM adds max_model_len). */
export function parseModels(text: string): { models: string[]; maxModelLen: number | undefined } {
  const json: unknown = JSON.parse(text)
  const data = isRecord(json) && Array.isArray(json.data) ? json.data : []
  const models: string[] = []
  let maxModelLen: number | undefined
  for (const m of data) {
    if (!isRecord(m)) continue
    if (typeof m.id === 'string') models.push(m.id)
    const len = m.max_model_len
    if (typeof len === 'number' && Number.isFinite(len) && len > 0)
      maxModelLen = Math.max(maxModelLen ?? 0, len)
  }
  return { models, maxModelLen }
}

export async function readFacts(
  url: string,
  engine: EngineName,
  metricsPath: string,
  timeoutMs: number,
): Promise<ReadResult> {
  const origin = new URL(url).origin
  const timer = AbortSignal.timeout(timeoutMs)
  try {
    const [metrics, models, props] = await Promise.all([
      getText(`${origin}${metricsPath}`, timeoutMs),
      getText(`${origin}/v1/models`, timeoutMs).catch(() => undefined),
      engine === 'llamacpp' ? getText(`${origin}/props`, timeoutMs).catch(() => undefined) : undefined,
    ])
    if (timer.aborted) throw new Error(`no answer within ${timeoutMs} ms`)
    const load = adapterFor(engine).parse(metrics)
    if (load === undefined)
      return { ok: false, origin, reason: `${origin}${metricsPath} is not ${engine} metrics` }
    const listed = models === undefined ? undefined : parseModels(models)
    const slots = props === undefined ? undefined : slotsFromPropsText(props)
    const facts: LiveFacts = {
      origin,
      ...(load.kvCapacityTokens === undefined ? {} : { kvCapacityTokens: load.kvCapacityTokens }),
      ...(load.blockSize === undefined ? {} : { blockSize: load.blockSize }),
      ...(listed?.maxModelLen === undefined ? {} : { maxModelLen: listed.maxModelLen }),
      ...(listed === undefined ? {} : { models: listed.models }),
      ...(slots === undefined ? {} : { maxNumSeqs: slots }),
    }
    return { ok: true, facts }
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    return { ok: false, origin, reason: e.code === undefined ? e.message : `${e.code}: ${e.message}` }
  }
}
