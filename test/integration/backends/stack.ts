/**
 * A gateway on port 0 over real backends (createBackends) and simulator replicas, for the
 * backends' acceptance tests. The gateway runs as a plain proxy (no admission), so which
 * endpoint serves a request is the backends' choice alone.
 */
import { Registry } from 'prom-client'
import { Agent, type Dispatcher, request } from 'undici'
import type { PoolEndpoint } from '../../../src/backends/endpoint.js'
import { type BackendsHandle, createBackends, type Resolver } from '../../../src/backends/index.js'
import type { EndpointPool } from '../../../src/backends/pool.js'
import { systemClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { type SimHandle, startSim } from '../../../src/sim/index.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { sleep } from './wait.js'

export const MODEL = 'sim/tiny'

export interface Reply {
  readonly status: number
  readonly backend: string | undefined
  readonly startedAt: number
  readonly endedAt: number
  /** Set when the client aborted, or the request failed below HTTP. */
  readonly error?: string
}

export interface ChatOptions {
  maxTokens?: number
  ignoreEos?: boolean
  stream?: boolean
  /** Abort the request this many ms after sending it. */
  abortAfterMs?: number
  /** Abort the request when this signal aborts. */
  signal?: AbortSignal
  /** Extra body fields (e.g. an invalid value for an upstream 400). */
  extra?: Record<string, unknown>
}

export interface Stack {
  readonly backends: BackendsHandle
  readonly pool: EndpointPool
  readonly gw: TestGateway
  readonly registry: Registry
  chat(opts?: ChatOptions): Promise<Reply>
  endpoint(name: string): PoolEndpoint | undefined
  close(): Promise<void>
}

export async function startStack(
  pool: Record<string, unknown>,
  raw: Record<string, unknown> = {},
  resolver?: Resolver,
): Promise<Stack> {
  const full = { ...raw, backends: { pools: [{ name: 'p', models: ['*'], ...pool }] } }
  const config = configSchema.parse(full)
  const registry = new Registry()
  const backends = createBackends(config, { clock: systemClock, registry, ...(resolver ? { resolver } : {}) })
  backends.start()
  const gw = await startGateway(backends, full)
  const poolObj = backends.pools()[0] as EndpointPool
  // the test's own client: destroyed at close, so no half-sent request keeps a socket open
  const client = new Agent()
  return {
    backends,
    pool: poolObj,
    gw,
    registry,
    endpoint: (name) => poolObj.allEndpoints().find((e) => e.name === name),
    chat: (opts = {}) => chat(gw.url, opts, client),
    close: async () => {
      await client.destroy()
      await gw.close() // closes the backends too
    },
  }
}

export async function chat(base: string, opts: ChatOptions = {}, dispatcher?: Dispatcher): Promise<Reply> {
  const startedAt = performance.now()
  const ac = new AbortController()
  const timer = opts.abortAfterMs === undefined ? undefined : setTimeout(() => ac.abort(), opts.abortAfterMs)
  opts.signal?.addEventListener('abort', () => ac.abort(), { once: true })
  const body = {
    model: MODEL,
    messages: [{ role: 'user', content: 'Say hello to the gateway tests.' }],
    max_tokens: opts.maxTokens ?? 8,
    ...(opts.ignoreEos ? { ignore_eos: true } : {}),
    ...(opts.stream ? { stream: true } : {}),
    ...opts.extra,
  }
  try {
    const res = await request(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: ac.signal,
      ...(dispatcher === undefined ? {} : { dispatcher }),
    })
    await res.body.text()
    const backend = res.headers['x-gateway-backend']
    return {
      status: res.statusCode,
      backend: typeof backend === 'string' ? backend : undefined,
      startedAt,
      endedAt: performance.now(),
    }
  } catch (err) {
    return {
      status: 0,
      backend: undefined,
      startedAt,
      endedAt: performance.now(),
      error: (err as Error).name,
    }
  } finally {
    if (timer !== undefined) clearTimeout(timer)
  }
}

/** Sends `opts` requests to the gateway `concurrency` at a time until stopped; keeps every reply. */
export function traffic(s: Pick<Stack, 'chat'>, concurrency: number, opts: ChatOptions = {}) {
  const replies: Reply[] = []
  let running = true
  const workers = Array.from({ length: concurrency }, async () => {
    while (running) {
      replies.push(await s.chat(opts))
      await sleep(2)
    }
  })
  return {
    replies,
    stop: async () => {
      running = false
      await Promise.all(workers)
      return replies
    },
  }
}

/** Injects a fault into a simulator replica (POST /admin/faults); a crash may cut the answer. */
export async function fault(url: string, spec: Record<string, unknown>): Promise<void> {
  try {
    const res = await request(`${url}/admin/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(spec),
    })
    await res.body.text()
  } catch {
    // the crash fault resets the connection it came on
  }
}

export async function sims(replicas: number, extra: Parameters<typeof startSim>[0] = {}): Promise<SimHandle> {
  return startSim({ replicas, port: 0, profile: 'tiny', host: '127.0.0.1', ...extra })
}
