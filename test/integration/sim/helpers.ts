import { SseSplitter } from '../../../src/loadgen/sse-split.js'

export interface SseEvent {
  /** performance.now() when the event arrived. */
  readonly t: number
  readonly data: string
}

export interface StreamResult {
  readonly status: number
  readonly headers: Headers
  readonly start: number
  readonly events: SseEvent[]
  /** Parsed JSON of every event but [DONE]. */
  readonly chunks: Record<string, unknown>[]
  readonly raw: string
}

/** POSTs and reads an SSE response to the end, timing each event. */
export async function postStream(url: string, body: unknown, signal?: AbortSignal): Promise<StreamResult> {
  const start = performance.now()
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal }),
  })
  const events: SseEvent[] = []
  let raw = ''
  const sse = new SseSplitter()
  const reader = res.body?.getReader()
  const dec = new TextDecoder()
  if (reader !== undefined) {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      const t = performance.now()
      const s = dec.decode(value, { stream: true })
      raw += s
      sse.push(s, (ev) => {
        if (ev.startsWith('data: ')) events.push({ t, data: ev.slice(6) })
      })
    }
  }
  const chunks = events
    .filter((e) => e.data !== '[DONE]')
    .map((e) => JSON.parse(e.data) as Record<string, unknown>)
  return { status: res.status, headers: res.headers, start, events, chunks, raw }
}

export async function postJson(
  url: string,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

/** Polls `fn` until it returns true or `timeoutMs` passes. */
export async function waitFor(
  fn: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  everyMs = 20,
): Promise<boolean> {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    if (await fn()) return true
    await sleep(everyMs)
  }
  return fn()
}

export function metricValue(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
  if (line === undefined) throw new Error(`no sample ${name}`)
  return Number(line.slice(line.lastIndexOf(' ') + 1))
}
