/**
 * A minimal, fast OpenAI-ish upstream for benchmarks: it measures the proxy, not itself.
 *
 * - `POST /v1/chat/completions` (and `/v1/completions`): a small `chat.completion` JSON;
 *   with `"stream": true`, an SSE stream of `max_tokens` (default `chunks`) content chunks
 *   `intervalMs` apart, then the usage chunk when `stream_options.include_usage` asked for
 *   it, then `data: [DONE]`. Every chunk carries `"t_ns"`: the CLOCK_MONOTONIC time
 *   (`process.hrtime.bigint()`, shared by every process of the machine) at which it was
 *   written, so a client can compute the upstream-to-client delay of each chunk.
 * - `GET /metrics`: an idle vLLM page, so a gateway's scraper finds the endpoint fresh.
 * - `GET /v1/models`: one model.
 *
 * Run as a process: `node bench/dist/trivial-upstream.js --port 0 [--chunks 20] [--interval-ms 10]`;
 * it prints `listening <port>` on stdout once ready. bench:overhead builds it with
 * bench/tsconfig.build.json and runs it in plain Node, so the baseline carries no TS loader.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'

export const STAMP_FIELD = 't_ns'

export interface TrivialUpstreamOptions {
  readonly port?: number
  readonly host?: string
  /** Content chunks per stream when the request sets no max_tokens. */
  readonly chunks?: number
  /** Gap between two chunks of a stream, ms. */
  readonly intervalMs?: number
}

export interface TrivialUpstream {
  readonly url: string
  readonly port: number
  close(): Promise<void>
}

const MODEL = 'bench-model'

export const IDLE_VLLM_METRICS = [
  '# TYPE vllm:num_requests_running gauge',
  `vllm:num_requests_running{model_name="${MODEL}"} 0`,
  '# TYPE vllm:num_requests_waiting gauge',
  `vllm:num_requests_waiting{model_name="${MODEL}"} 0`,
  '# TYPE vllm:kv_cache_usage_perc gauge',
  `vllm:kv_cache_usage_perc{model_name="${MODEL}"} 0`,
  '# TYPE vllm:num_preemptions_total counter',
  `vllm:num_preemptions_total{model_name="${MODEL}"} 0`,
  '# TYPE vllm:prefix_cache_queries_total counter',
  `vllm:prefix_cache_queries_total{model_name="${MODEL}"} 0`,
  '# TYPE vllm:prefix_cache_hits_total counter',
  `vllm:prefix_cache_hits_total{model_name="${MODEL}"} 0`,
  '',
].join('\n')

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1,
  model: MODEL,
  choices: [
    { index: 0, message: { role: 'assistant', content: 'ok' }, logprobs: null, finish_reason: 'stop' },
  ],
  usage: { prompt_tokens: 8, completion_tokens: 1, total_tokens: 9 },
})
const MODELS = JSON.stringify({
  object: 'list',
  data: [{ id: MODEL, object: 'model', created: 1, owned_by: 'bench' }],
})
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }

const stamp = () => Number(process.hrtime.bigint())

function chunk(content: string, finish: string | null): string {
  return `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"${MODEL}","choices":[{"index":0,"delta":{"content":"${content}"},"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}],"${STAMP_FIELD}":${stamp()}}\n\n`
}

function usageChunk(completion: number): string {
  return `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"${MODEL}","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":${completion},"total_tokens":${8 + completion}},"${STAMP_FIELD}":${stamp()}}\n\n`
}

interface Parsed {
  stream: boolean
  chunks: number
  usage: boolean
}

function parse(body: string, defaultChunks: number): Parsed {
  let v: unknown
  try {
    v = JSON.parse(body)
  } catch {
    return { stream: false, chunks: defaultChunks, usage: false }
  }
  const o = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>
  const max = o.max_completion_tokens ?? o.max_tokens
  const opts = o.stream_options as Record<string, unknown> | undefined
  return {
    stream: o.stream === true,
    chunks: typeof max === 'number' && max >= 1 ? Math.min(Math.floor(max), 10_000) : defaultChunks,
    usage: opts?.include_usage === true,
  }
}

function stream(res: ServerResponse, p: Parsed, intervalMs: number): void {
  res.writeHead(200, SSE_HEADERS)
  let sent = 0
  let timer: NodeJS.Timeout | undefined
  const next = () => {
    sent++
    const last = sent === p.chunks
    res.write(chunk(last ? '.' : 'x', last ? 'length' : null))
    if (!last) {
      timer = setTimeout(next, intervalMs)
      return
    }
    if (p.usage) res.write(usageChunk(p.chunks))
    res.end('data: [DONE]\n\n')
  }
  res.on('close', () => clearTimeout(timer))
  next()
}

function handle(req: IncomingMessage, res: ServerResponse, chunks: number, intervalMs: number): void {
  const url = req.url ?? ''
  if (req.method === 'GET') {
    if (url === '/metrics')
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(IDLE_VLLM_METRICS)
    else if (url === '/v1/models') res.writeHead(200, { 'content-type': 'application/json' }).end(MODELS)
    else res.writeHead(404).end()
    return
  }
  let body = ''
  req.setEncoding('utf8')
  req.on('data', (s: string) => {
    body += s
  })
  req.on('end', () => {
    const p = parse(body, chunks)
    if (p.stream) stream(res, p, intervalMs)
    else res.writeHead(200, { 'content-type': 'application/json' }).end(COMPLETION)
  })
}

export async function startTrivialUpstream(opts: TrivialUpstreamOptions = {}): Promise<TrivialUpstream> {
  const chunks = opts.chunks ?? 20
  const intervalMs = opts.intervalMs ?? 10
  const sockets = new Set<Socket>()
  const server: Server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    req.on('error', () => res.destroy())
    res.on('error', () => {})
    handle(req, res, chunks, intervalMs)
  })
  server.on('connection', (s: Socket) => {
    s.setNoDelay(true)
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve)
  })
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      chunks: { type: 'string', default: '20' },
      'interval-ms': { type: 'string', default: '10' },
    },
  })
  const up = await startTrivialUpstream({
    port: Number(values.port),
    chunks: Number(values.chunks),
    intervalMs: Number(values['interval-ms']),
  })
  process.stdout.write(`listening ${up.port}\n`)
  const stop = () => void up.close().then(() => process.exit(0))
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) void main()
