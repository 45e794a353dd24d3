/**
 * A scriptable upstream for proxy tests: a real HTTP server on port 0 whose handler each
 * test sets, recording when each request's connection closed.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface Seen {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
  /** performance.now() when the upstream saw the request close before it had answered in full. */
  abortedAt?: number
}

export type Handler = (req: IncomingMessage, res: ServerResponse, seen: Seen) => unknown

export interface FakeUpstream {
  readonly url: string
  readonly port: number
  readonly seen: Seen[]
  handler: Handler
  close(): Promise<void>
}

/**
 * A vLLM-style /metrics page with the fake upstream's real in-flight count (and, as real
 * servers have, a counter that moves), so scrapers find it fresh and see its load.
 */
export function vllmMetrics(running: number): string {
  const cpu = process.cpuUsage()
  return [
    '# TYPE vllm:num_requests_running gauge',
    `vllm:num_requests_running{model_name="m"} ${running}`,
    '# TYPE vllm:num_requests_waiting gauge',
    'vllm:num_requests_waiting{model_name="m"} 0',
    '# TYPE vllm:kv_cache_usage_perc gauge',
    'vllm:kv_cache_usage_perc{model_name="m"} 0',
    '# TYPE process_cpu_seconds_total counter',
    `process_cpu_seconds_total ${(cpu.user + cpu.system) / 1e6}`,
    '',
  ].join('\n')
}

export async function startUpstream(handler: Handler = (_q, s) => s.end('{}')): Promise<FakeUpstream> {
  const seen: Seen[] = []
  let active = 0
  const sockets = new Set<Socket>()
  const up: FakeUpstream = {
    url: '',
    port: 0,
    seen,
    handler,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
  const server: Server = createServer((req, res) => {
    if (req.url === '/metrics') {
      res.end(vllmMetrics(active))
      return
    }
    active++
    res.on('close', () => active--)
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const s: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      }
      seen.push(s)
      res.on('close', () => {
        if (!res.writableFinished) s.abortedAt = performance.now()
      })
      void up.handler(req, res, s)
    })
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  Object.assign(up, { url: `http://127.0.0.1:${port}`, port })
  return up
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** An OpenAI chat.completion.chunk event. */
export function chunkEvent(content: string, finish: string | null = null): string {
  const choice = { index: 0, delta: { content }, logprobs: null, finish_reason: finish }
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [choice] })}\n\n`
}

export function usageEvent(prompt: number, completion: number): string {
  const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage })}\n\n`
}
