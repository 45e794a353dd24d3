/**
 * A wave of streamed chat completions through a gateway, each classified by how it ended
 * as the client saw it: `complete` (the stream ended with [DONE]), `error-event` (it ended
 * with the gateway's final error event), `status N` (refused or failed before streaming;
 * `status N REASON` with the `reason` option: the gateway's x-gateway-reject-reason),
 * `refused` (no listener took the connection),
 * `cut` (the connection ended with neither: what must never happen), or `timeout` (no
 * end within the client's own timeout: what must never happen either).
 */
import { Agent, request } from 'undici'

export type Ending =
  | 'complete'
  | 'error-event'
  | 'cut'
  | 'refused'
  | 'timeout'
  | `status ${number}`
  | `status ${number} ${string}`

const agent = new Agent({ connections: 2_048, headersTimeout: 0, bodyTimeout: 0 })

export async function streamOnce(
  url: string,
  opts: {
    maxTokens?: number
    timeoutMs?: number
    headers?: Record<string, string>
    content?: string
    /** A refusal's ending names its reason (x-gateway-reject-reason). */
    reason?: boolean
  } = {},
): Promise<Ending> {
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 30_000)
  try {
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      signal,
      headers: { 'content-type': 'application/json', ...opts.headers },
      body: JSON.stringify({
        model: 'meta-llama/Llama-3.1-8B-Instruct',
        stream: true,
        max_tokens: opts.maxTokens ?? 32,
        ignore_eos: true,
        messages: [{ role: 'user', content: opts.content ?? `hello ${Math.random()}` }],
      }),
    })
    if (res.statusCode !== 200) {
      await res.body.text()
      return opts.reason === true
        ? `status ${res.statusCode} ${String(res.headers['x-gateway-reject-reason'])}`
        : `status ${res.statusCode}`
    }
    let text = ''
    try {
      text = await res.body.text()
    } catch {
      return signal.aborted ? 'timeout' : 'cut'
    }
    // the gateway's final error event names its code (docs/errors.md, a stream that breaks)
    if (text.includes('"code":"GW_ERR_')) return 'error-event'
    return text.includes('data: [DONE]') ? 'complete' : 'cut'
  } catch (err) {
    if (signal.aborted) return 'timeout'
    // no listener (the gateway closed it, or is gone): the request was never accepted
    return (err as { code?: string }).code === 'ECONNREFUSED' ? 'refused' : 'cut'
  }
}

/** `n` streams at once; the count of each ending. */
export async function wave(url: string, n: number, opts: Parameters<typeof streamOnce>[1] = {}) {
  const endings = await Promise.all(Array.from({ length: n }, () => streamOnce(url, opts)))
  const counts: Record<string, number> = {}
  for (const e of endings) counts[e] = (counts[e] ?? 0) + 1
  return counts
}

/** The sum of a metric's series whose labels include every `k="v"` of `labels`. */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue
    sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return sum
}
