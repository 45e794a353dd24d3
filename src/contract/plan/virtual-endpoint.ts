/**
 * One simulated replica as the gateway's admission sees it, in virtual time: the simulator's
 * engine (the same step machine `slo-gateway sim` serves), the backends' in-flight ledger,
 * "scrapes" of the engine's own state at the pool's scrape interval, corrected by the ledger
 * exactly as a real endpoint's load is (load-correction.ts), and the endpoint's engine facts
 * (engine-facts.ts), learned as a real endpoint's are: from the scrapes (the engine's prefill
 * and prompt histograms, as its vLLM /metrics shows them) and from admission's observations
 * of the requests sent here. No sockets, no timers: the plan's driver moves time.
 */
import { Dispatcher } from 'undici'
import { EngineFacts, type EstimatorPriorFacts } from '../../backends/engine-facts.js'
import { Ledger, type LedgerEntryHandle } from '../../backends/ledger.js'
import { capacityOf, correctLoad } from '../../backends/load-correction.js'
import type {
  BackendLoad,
  EffectiveLoad,
  Endpoint,
  EndpointResult,
  EndpointView,
  Lease,
} from '../../backends/types.js'
import type { Clock } from '../../clock.js'
import type { PoolConfig } from '../../config/schema.js'
import { SimEngine } from '../../sim/engine.js'
import type { Histogram } from '../../sim/histogram.js'
import { VLLM_REQUEST_LATENCY_BUCKETS } from '../../sim/metric-formats/vllm-buckets.js'
import type { SimProfile } from '../../sim/profile-schema.js'

/** The histograms the engine facts read (vLLM's prefill time and prompt tokens per finished request). */
const FACT_BUCKETS = {
  prefill: VLLM_REQUEST_LATENCY_BUCKETS,
  promptTokens: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000],
}

/** Never sends anything: a virtual endpoint is reached through its engine, not HTTP. */
const NO_DISPATCHER = new Dispatcher()

class VirtualLease implements Lease {
  private released = false
  constructor(
    readonly endpoint: VirtualEndpoint,
    private readonly entry: LedgerEntryHandle,
  ) {}
  release(_result: EndpointResult): void {
    if (this.released) return
    this.released = true
    this.endpoint.close(this.entry)
  }
  ended(_ticket: unknown, result: EndpointResult | undefined): void {
    this.release(result ?? 'client_abort')
  }
  prefilled(): void {
    if (!this.released) this.endpoint.started(this.entry)
  }
}

export class VirtualEndpoint implements Endpoint {
  readonly origin: string
  readonly dispatcher: Dispatcher = NO_DISPATCHER
  readonly engine: SimEngine
  /** Its engine's facts, learned as a real endpoint's are. */
  readonly facts: EngineFacts
  /** When the step in flight ends (virtual ms); undefined while the engine is idle. */
  stepEndsAt: number | undefined = undefined
  private readonly ledger = new Ledger()
  private scraped: BackendLoad | undefined = undefined
  private scrapedAt: number | undefined = undefined
  private readonly capacity: EndpointView['capacity']

  constructor(
    readonly name: string,
    profile: SimProfile,
    private readonly pool: PoolConfig,
    private readonly clock: Clock,
    priors: EstimatorPriorFacts,
  ) {
    this.origin = `virtual://${name}`
    this.engine = new SimEngine({ profile, buckets: FACT_BUCKETS })
    const cap = pool.capacity
    this.capacity = capacityOf(cap)
    this.facts = new EngineFacts({
      engine: pool.engine,
      ...priors,
      stepTokens: cap.max_num_batched_tokens,
      kvTokens: cap.kv_tokens,
      maxNumSeqs: cap.max_num_seqs,
    })
  }

  get load(): BackendLoad | undefined {
    return this.scraped
  }

  get loadAt(): number | undefined {
    return this.scrapedAt
  }

  /** Reads the engine's state as its /metrics would show it now. */
  scrape(): void {
    const epoch = this.ledger.beginScrape()
    const e = this.engine
    const pe = e.profile.engine
    const prefill = e.stats.hist.prefill as Histogram
    const prompt = e.stats.hist.promptTokens as Histogram
    this.scraped = {
      waiting: e.numWaiting,
      running: e.numRunning,
      kvUsage: e.kv.usage,
      kvCapacityTokens: pe.numGpuBlocks * pe.blockSize,
      blockSize: pe.blockSize,
      prefixCaching: pe.enablePrefixCaching,
      prefillSecondsSum: prefill.sum,
      prefillCount: prefill.count,
      promptTokensSum: prompt.sum,
    }
    this.scrapedAt = this.clock.now()
    this.ledger.applyScrape(epoch)
    this.facts.scraped(this.scraped)
  }

  effectiveLoad(): EffectiveLoad {
    const now = this.clock.now()
    const age = this.scrapedAt === undefined ? undefined : now - this.scrapedAt
    return correctLoad({
      load: this.scraped,
      ledger: this.ledger.snapshot(),
      fresh: age !== undefined && age <= this.pool.stale_after_ms,
      ageMs: age,
      capacity: this.capacity,
    })
  }

  view(): EndpointView {
    return {
      name: this.name,
      pool: this.pool.name,
      effective: this.effectiveLoad(),
      capacity: this.capacity,
      facts: this.facts,
    }
  }

  /** Usable as a real endpoint is: fresh load, or a pool that fails open. */
  usable(): boolean {
    if (this.pool.fail_open) return true
    const at = this.scrapedAt
    return at !== undefined && this.clock.now() - at <= this.pool.stale_after_ms
  }

  acquire(tokens: number): Lease {
    return new VirtualLease(this, this.ledger.open(tokens, this.clock.now()))
  }

  /** @internal the lease's release. */
  /** A request's first token came (VirtualLease.prefilled). */
  started(entry: LedgerEntryHandle): void {
    this.ledger.started(entry)
  }

  close(entry: LedgerEntryHandle): void {
    this.ledger.close(entry)
  }
}
