/**
 * A backend pool for admission unit tests: endpoints with a load the test sets, and a
 * fixed number of slots; acquire() honours the headroom gate like the real pool.
 */

import { Admission } from '../../../src/admission/admission.js'
import { EndpointGates } from '../../../src/admission/gate.js'
import { EndpointPrefixCache } from '../../../src/backends/endpoint-prefix-cache.js'
import type { EngineFactsView } from '../../../src/backends/engine-facts.js'
import type {
  BackendPool,
  Backends,
  EffectiveLoad,
  Endpoint,
  EndpointResult,
  EndpointView,
  Lease,
} from '../../../src/backends/types.js'
import { ManualClock } from '../../../src/clock.js'
import type { ScorerName } from '../../../src/config/routing.js'
import { configSchema, poolSchema } from '../../../src/config/schema.js'
import { promptSize } from '../../../src/openai/request-fields.js'
import type { TokenEstimator } from '../../../src/openai/token-estimator.js'
import { Ticket } from '../../../src/ticket.js'

export class FakePool implements BackendPool {
  readonly name: string
  readonly config
  load: EffectiveLoad = { waiting: 0, running: 0, inflightRequests: 0, inflightTokens: 0, fresh: true }
  endpointsUp = 1
  /** Leases given and not released. */
  leased = 0
  /** Most leases at once (slots). */
  slots = Number.POSITIVE_INFINITY
  readonly released: EndpointResult[] = []
  /** Each endpoint's prefix cache model, when the pool was made with `prefixCache: true`. */
  readonly prefixCaches: EndpointPrefixCache[] = []
  private readonly withPrefixCache: boolean
  /** The engine facts of its first endpoint, when the test gives them (endpoints() lists it). */
  facts: EngineFactsView | undefined = undefined

  constructor(name = 'main', models = ['m'], opts: { prefixCache?: boolean; scorer?: ScorerName } = {}) {
    this.name = name
    this.config = poolSchema.parse({
      name,
      models,
      endpoints: ['http://127.0.0.1:1'],
      ...(opts.scorer === undefined ? {} : { routing: { scorer: opts.scorer } }),
    })
    this.withPrefixCache = opts.prefixCache === true
  }

  private prefixCacheOf(i: number): { prefixCache?: EndpointPrefixCache } {
    if (!this.withPrefixCache) return {}
    this.prefixCaches[i] ??= new EndpointPrefixCache()
    return { prefixCache: this.prefixCaches[i] }
  }

  views(): EndpointView[] {
    return Array.from({ length: this.endpointsUp }, (_, i) => ({
      name: `${this.name}-${i}`,
      pool: this.name,
      effective: { ...this.load, inflightRequests: this.load.inflightRequests + this.leased },
      capacity: {},
      ...this.prefixCacheOf(i),
    }))
  }

  endpoints(): Endpoint[] {
    if (this.facts === undefined) return []
    const e: Endpoint = {
      name: `${this.name}-0`,
      origin: 'http://127.0.0.1:1',
      dispatcher: undefined as never,
      load: undefined,
      loadAt: undefined,
      facts: this.facts,
    }
    return [e]
  }

  acquire(_tokens: number, accept?: (v: EndpointView) => boolean): Lease | undefined {
    if (this.leased >= this.slots) return undefined
    const view = this.views()[0]
    if (view === undefined || (accept !== undefined && !accept(view))) return undefined
    this.leased++
    let done = false
    const release = (r: EndpointResult) => {
      if (done) return
      done = true
      this.leased--
      this.released.push(r)
    }
    return {
      endpoint: {
        name: view.name,
        origin: 'http://127.0.0.1:1',
        dispatcher: undefined as never,
        load: undefined,
        loadAt: undefined,
        ...this.prefixCacheOf(0),
      },
      release,
      ended: (_t, r) => release(r ?? 'client_abort'),
    }
  }

  retryAfterMs(): number {
    return 1000
  }
}

export function fakeBackends(...pools: FakePool[]): Backends {
  return {
    route: (model) => pools.find((p) => model !== undefined && p.config.models.includes(model)) ?? pools[0],
    pools: () => pools,
    modelIds: () => pools.flatMap((p) => p.config.models),
    ready: () => true,
    start: () => {},
    close: async () => {},
    state: () => ({}),
  }
}

/**
 * One pool's endpoint gates on a fake clock at 1,000 ms (the default classes, a prefill
 * budget of 8,000 tokens, the default prior's prefill rate), and the view of its endpoint.
 */
export function gatesOnOneEndpoint(): { gates: EndpointGates; clock: ManualClock; view: EndpointView } {
  const config = configSchema.parse({ admission: { max_prefill_tokens_per_endpoint: 8_000 } })
  const clock = new ManualClock(1_000)
  const gates = new EndpointGates(config.classes, config.admission, clock, {
    value: 20_000,
    source: 'default_prior',
  })
  return { gates, clock, view: new FakePool().views()[0]! }
}

/**
 * A chat request's ticket as parse leaves it (model, generation, its prompt's size and
 * estimated tokens by `tokens`), for tests that call Admission.admit with its body.
 */
export function chatTicket(
  tokens: TokenEstimator,
  body: { model: string; messages: readonly { role: string; content: string }[] },
  expectedOutputTokens: number,
  id = 't',
): Ticket {
  const t = new Ticket(id, 'POST', '/v1/chat/completions', 1000)
  t.model = body.model
  t.generation = true
  t.expectedOutputTokens = expectedOutputTokens
  const size = promptSize(body)
  t.promptChars = size.chars
  t.promptMessages = size.messages
  t.promptTokens = tokens.estimate(body.model, size.chars, size.messages)
  return t
}

/**
 * Admission over two fake pools, `main` (model m) and `small` (model s, what a
 * `fallback_model` step moves to), with the config's other sections from `raw`.
 */
export function twoPoolAdmission(raw: Record<string, unknown>) {
  const config = configSchema.parse({
    ...raw,
    backends: {
      pools: [
        { name: 'main', models: ['m'], endpoints: ['http://127.0.0.1:1'] },
        { name: 'small', models: ['s'], endpoints: ['http://127.0.0.1:2'] },
      ],
    },
  })
  const main = new FakePool('main', ['m'])
  const small = new FakePool('small', ['s'])
  const clock = new ManualClock(1000)
  const admission = new Admission(config, fakeBackends(main, small), clock)
  return { admission, main, small, clock, config }
}
