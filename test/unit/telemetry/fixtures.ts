/** Shared helpers for the telemetry tests: config, tickets, registry reads, fake backends. */
import { Registry } from 'prom-client'
import type { Dispatcher } from 'undici'
import type { BackendLoad, BackendPool, Backends, Endpoint } from '../../../src/backends/types.js'
import { ManualClock } from '../../../src/clock.js'
import { configSchema, type GatewayConfig } from '../../../src/config/schema.js'
import { createTelemetry, type Telemetry } from '../../../src/telemetry/index.js'
import { Ticket } from '../../../src/ticket.js'

export const MODEL = 'llama-3.1-8b'

export function testConfig(extra: Record<string, unknown> = {}): GatewayConfig {
  return configSchema.parse({
    auth: { anonymous: 'default' },
    backends: {
      pools: [
        {
          name: 'main',
          models: [MODEL],
          endpoints: ['http://127.0.0.1:1', 'http://127.0.0.1:2'],
          cost_per_hour: 3.6,
        },
      ],
    },
    telemetry: { summary_interval_ms: 0 },
    ...extra,
  })
}

export interface TicketSpec {
  tenant?: string
  class?: string
  model?: string
  stream?: boolean
  /** ms after arrival */
  dispatch?: number
  ttft?: number
  e2e?: number
  chunks?: number
  usage?: { promptTokens: number; completionTokens: number }
  promptTokens?: number
  itl?: number[]
  outcome?: Ticket['outcome']
  status?: number
  errorCode?: string
  degraded?: string[]
  predictedTtftMs?: number
  pool?: string
}

let seq = 0

/** A finished ticket that arrived at `arrivedAt`; times in `spec` are relative to it. */
export function ticket(arrivedAt: number, spec: TicketSpec = {}): Ticket {
  const t = new Ticket(`t${++seq}`, 'POST', '/v1/chat/completions', arrivedAt)
  t.tenant = spec.tenant ?? 'acme'
  t.class = spec.class ?? 'interactive'
  t.model = spec.model ?? MODEL
  t.stream = spec.stream ?? true
  t.promptTokens = spec.promptTokens ?? 100
  t.outcome = spec.outcome ?? 'ok'
  t.status = spec.status ?? (t.outcome === 'ok' ? 200 : 0)
  if (spec.errorCode !== undefined) t.errorCode = spec.errorCode
  if (spec.degraded !== undefined) t.degraded = [...spec.degraded]
  if (spec.predictedTtftMs !== undefined) t.predictedTtftMs = spec.predictedTtftMs
  if (spec.usage !== undefined) t.usage = { ...spec.usage }
  const dispatched = t.outcome !== 'rejected' && t.outcome !== 'invalid'
  if (dispatched) {
    t.poolName = spec.pool ?? 'main'
    t.dispatchedAt = arrivedAt + (spec.dispatch ?? 0)
  }
  if (spec.ttft !== undefined) t.firstTokenAt = arrivedAt + spec.ttft
  if (spec.e2e !== undefined) t.finishedAt = arrivedAt + spec.e2e
  t.contentChunks = spec.chunks ?? 0
  if (spec.itl !== undefined) t.itlMs = [...spec.itl]
  return t
}

/** Telemetry on a fresh registry and a manual clock. */
export function setup(config = testConfig(), makeBackends?: (clock: ManualClock) => Backends) {
  const clock = new ManualClock(1_000_000)
  const backends = makeBackends?.(clock)
  const registry = new Registry()
  const lines: object[] = []
  const telemetry: Telemetry = createTelemetry(config, {
    registry,
    clock,
    logger: { info: (o) => lines.push(o) },
    ...(backends === undefined ? {} : { backends }),
  })
  return { clock, registry, telemetry, lines, config, backends }
}

type Labels = Record<string, string>

/** Sum of the samples of `name` whose labels include `match`. */
export async function value(registry: Registry, name: string, match: Labels = {}): Promise<number> {
  let sum = 0
  for (const s of await samples(registry, name)) {
    if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) sum += s.value
  }
  return sum
}

/** Every sample of a metric family or series name (`x_bucket`, `x_count`, `x_sum` too). */
export async function samples(
  registry: Registry,
  name: string,
): Promise<{ labels: Labels; value: number }[]> {
  const out: { labels: Labels; value: number }[] = []
  for (const family of await registry.getMetricsAsJSON()) {
    for (const v of family.values) {
      const series = 'metricName' in v && typeof v.metricName === 'string' ? v.metricName : family.name
      if (series !== name) continue
      const labels: Labels = {}
      for (const [k, x] of Object.entries(v.labels)) labels[k] = String(x)
      out.push({ labels, value: v.value })
    }
  }
  return out
}

/** A Backends double with settable loads. */
export class FakeBackends implements Backends {
  readonly loads = new Map<string, { load: BackendLoad | undefined; loadAt: number | undefined }>()
  readonly poolList: BackendPool[]

  constructor(
    config: GatewayConfig,
    endpointNames: Record<string, string[]>,
    private readonly clock: ManualClock,
  ) {
    this.poolList = config.backends.pools.map((pc) => {
      const self = this
      return {
        name: pc.name,
        config: pc,
        endpoints: (): readonly Endpoint[] =>
          (endpointNames[pc.name] ?? []).map((name) => ({
            name,
            origin: `http://${name}`,
            dispatcher: {} as unknown as Dispatcher,
            get load() {
              return self.loads.get(name)?.load
            },
            get loadAt() {
              return self.loads.get(name)?.loadAt
            },
          })),
        acquire: () => undefined,
        views: () => [],
        retryAfterMs: () => 0,
      }
    })
  }

  setLoad(endpoint: string, load: Partial<BackendLoad>): void {
    this.loads.set(endpoint, { load: { waiting: 0, running: 0, ...load }, loadAt: this.clock.now() })
  }

  route(): BackendPool | undefined {
    return this.poolList[0]
  }
  pools(): readonly BackendPool[] {
    return this.poolList
  }
  modelIds(): string[] {
    return []
  }
  ready(): boolean {
    return true
  }
  start(): void {}
  async close(): Promise<void> {}
  state(): unknown {
    return {}
  }
}
