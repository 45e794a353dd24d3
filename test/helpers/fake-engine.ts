/**
 * A fake model server for doctor's tests: a real HTTP server on port 0 that serves vLLM's
 * /metrics (with `vllm:cache_config_info`) and an OpenAI model list with `max_model_len`,
 * as a vLLM server states its facts. The facts can be changed between requests.
 */
import { createServer, type Server } from 'node:http'

export interface EngineFactsSpec {
  numGpuBlocks: number
  blockSize: number
  maxModelLen: number
  model: string
}

export interface FakeEngine {
  readonly url: string
  facts: EngineFactsSpec
  /** Requests served, by path. */
  readonly hits: Map<string, number>
  close(): Promise<void>
}

export function vllmMetricsText(f: EngineFactsSpec): string {
  const l = `model_name="${f.model}",engine="0"`
  return [
    '# HELP vllm:num_requests_running Number of requests in model execution batches.',
    '# TYPE vllm:num_requests_running gauge',
    `vllm:num_requests_running{${l}} 0.0`,
    '# TYPE vllm:num_requests_waiting gauge',
    `vllm:num_requests_waiting{${l}} 0.0`,
    '# TYPE vllm:kv_cache_usage_perc gauge',
    `vllm:kv_cache_usage_perc{${l}} 0.0`,
    '# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig',
    '# TYPE vllm:cache_config_info gauge',
    `vllm:cache_config_info{block_size="${f.blockSize}",cache_dtype="auto",enable_prefix_caching="True",gpu_memory_utilization="0.9",num_gpu_blocks="${f.numGpuBlocks}",engine="0"} 1.0`,
    '',
  ].join('\n')
}

export async function startFakeEngine(facts: EngineFactsSpec): Promise<FakeEngine> {
  const hits = new Map<string, number>()
  const state = { facts }
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/'
    hits.set(path, (hits.get(path) ?? 0) + 1)
    const f = state.facts
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
      res.end(vllmMetricsText(f))
      return
    }
    if (path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          object: 'list',
          data: [{ id: f.model, object: 'model', owned_by: 'vllm', max_model_len: f.maxModelLen }],
        }),
      )
      return
    }
    res.writeHead(404)
    res.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const addr = server.address()
  if (addr === null || typeof addr === 'string') throw new Error('no port')
  return {
    url: `http://127.0.0.1:${addr.port}`,
    get facts() {
      return state.facts
    },
    set facts(f: EngineFactsSpec) {
      state.facts = f
    },
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
