/**
 * What an engine says of itself outside its /metrics. Only llama.cpp's server says
 * something admission needs there: `GET /props` gives `total_slots`, its `--parallel`, the
 * most requests it runs at once (the rest wait in its queue, where the gateway cannot
 * predict them). vLLM's max_num_seqs and SGLang's max_running_requests are not served in a
 * stable place, so for them `capacity.max_num_seqs` stays the way to say it.
 */
import type { Dispatcher } from 'undici'
import type { EngineName } from '../config/schema.js'
import { isRecord } from '../is-record.js'

/** Larger answers are not a /props. */
const MAX_BYTES = 256 * 1024

/** The slot count in a llama.cpp `/props` body; undefined when it has none that makes sense. */
export function slotsFromProps(body: unknown): number | undefined {
  if (!isRecord(body)) return undefined
  const n = body.total_slots
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 65_536 ? n : undefined
}

/** The slot count in a `/props` answer's text (bounded, parsed); undefined when it has none. */
export function slotsFromPropsText(text: string): number | undefined {
  if (text.length > MAX_BYTES) return undefined
  try {
    return slotsFromProps(JSON.parse(text))
  } catch {
    return undefined
  }
}

/** The engine's own count of the requests it runs at once; undefined when it does not say. Never throws. */
export async function readSlots(
  client: Dispatcher,
  engine: EngineName,
  timeoutMs: number,
): Promise<number | undefined> {
  if (engine !== 'llamacpp') return undefined
  try {
    const res = await client.request({
      method: 'GET',
      path: '/props',
      headers: { accept: 'application/json' },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    })
    if (res.statusCode !== 200) {
      await res.body.dump()
      return undefined
    }
    return slotsFromPropsText(await res.body.text())
  } catch {
    return undefined
  }
}
