/**
 * One plan run: a workload at one offered rate against N simulated replicas, in virtual
 * time, with the gateway's admission in front (the real Admission: its estimator, class
 * queues, gates, decode guard, degrade ladder and early refusal, on a virtual clock) or
 * without it (every request straight to the least-loaded engine, as a plain proxy would).
 *
 * An event loop on a virtual clock (virtual-clock.ts), no real timers: the next event is the
 * earliest of an arrival, the end of an engine step, a scrape, and a timer of admission's own
 * (its deadline timer, its dispatcher), which admission sets on the virtual clock as the
 * gateway sets them on Node's. After the events of an instant, the timers due run (the
 * dispatcher the events asked for, as the gateway runs it after each I/O phase), then each
 * idle engine with work begins its next step, as the simulator's EngineLoop does.
 *
 * Each replica's engine facts (prefill rate, step time) are learned during the run, from the
 * same observations a real endpoint's are (virtual-endpoint.ts): the run starts from the
 * estimator's priors, as a gateway just started does.
 *
 * What it approximates (docs/contract.md): the network and the gateway's own CPU take no
 * time; a scrape reads the engine instantly; the gateway's prompt-token estimate is exact;
 * prompts share no prefix (no prefix-cache hits); conversations' history is not replayed.
 */
import { Admission } from '../../admission/admission.js'
import { Waiting } from '../../admission/pool-admission.js'
import { priorsFrom } from '../../backends/engine-facts.js'
import type { Backends, Lease } from '../../backends/types.js'
import type { GatewayConfig, PoolConfig } from '../../config/schema.js'
import { GatewayError } from '../../errors.js'
import { Exchange } from '../../exchange.js'
import type { LoadedWorkload } from '../../loadgen/workload-load.js'
import { planOutput } from '../../sim/output-length.js'
import type { SimProfile } from '../../sim/profile-schema.js'
import { deriveSeed, Rng } from '../../sim/rng.js'
import { type FinishReason, SimRequest, type TokenSink } from '../../sim/sim-request.js'
import { Ticket } from '../../ticket.js'
import { type PlanRequest, planRequests } from './plan-requests.js'
import { type RequestOutcome, type RunResult, summarizeOutcomes } from './run-outcomes.js'
import { VirtualClock } from './virtual-clock.js'
import { VirtualEndpoint } from './virtual-endpoint.js'
import { VirtualPool } from './virtual-pool.js'

export interface RunSpec {
  readonly profile: SimProfile
  /** The gateway's config: classes, admission, and the pool's scrape interval and capacity. */
  readonly config: GatewayConfig
  readonly pool: PoolConfig
  readonly workload: LoadedWorkload
  /** Offered requests/s to the whole pool. */
  readonly ratePerS: number
  readonly replicas: number
  /** Arrivals in [0, durationMs); then up to drainMs for the last ones to finish. */
  readonly durationMs: number
  readonly drainMs: number
  readonly admission: boolean
  readonly seed?: number
  /** Attainment of this workload class only (default: every request). */
  readonly sloClass?: string
}

/** A request queued at the gateway, whose dispatch or refusal the driver hears at once (not through a promise). */
class PlanWaiting extends Waiting {
  onSettle: (r: Lease | GatewayError) => void = () => {}
  override resolve(r: Lease | GatewayError): void {
    super.resolve(r)
    this.onSettle(r)
  }
}

/**
 * The plan never reads a ticket's token gaps (the exchange records each one there for
 * telemetry): a list that keeps none spares the garbage collector a number per token.
 */
function noGaps(): number[] {
  const gaps: number[] = []
  gaps.push = () => 0
  return gaps
}

export function runVirtual(spec: RunSpec): RunResult {
  // every refusal is a GatewayError: their stack traces are most of a refusal's cost, and
  // nothing here prints them
  const stackLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return run(spec)
  } finally {
    Error.stackTraceLimit = stackLimit
  }
}

function run(spec: RunSpec): RunResult {
  const started = performance.now()
  const clock = new VirtualClock()
  const priors = priorsFrom(spec.config.admission)
  const eps = Array.from(
    { length: spec.replicas },
    (_, i) => new VirtualEndpoint(`${spec.pool.name}-${i}`, spec.profile, spec.pool, clock, priors),
  )
  const pool = new VirtualPool(spec.pool, eps)
  const backends: Backends = {
    route: () => pool,
    pools: () => [pool],
    modelIds: () => [spec.profile.model],
    ready: () => true,
    start() {},
    close: async () => {},
    state: () => ({}),
  }
  // admission on the virtual clock: its time, and its timers (dispatcher, deadlines) too
  const admission = spec.admission
    ? new Admission(spec.config, backends, clock, undefined, undefined, clock)
    : undefined
  const pa = admission?.poolAdmission(pool)
  const outcomes: RequestOutcome[] = []
  /** Queued at the gateway: its request. */
  const queued = new Map<PlanWaiting, PlanRequest>()
  const inflight = new Set<PlanRequest>()
  const outputRng = new Rng(deriveSeed(spec.seed ?? spec.workload.workload.seed, 99))
  const ignoreEos = spec.workload.workload.ignore_eos

  const refuse = (r: PlanRequest, reason: string) => outcomes.push({ ...base(r), status: 'refused', reason })

  const send = (r: PlanRequest, ep: VirtualEndpoint, maxTokens: number, ex: Exchange | undefined) => {
    const out = planOutput(maxTokens, ignoreEos, spec.profile.output, outputRng)
    let first = -1
    inflight.add(r)
    const sink: TokenSink = {
      onToken(req: SimRequest, finish: FinishReason | null) {
        const now = clock.t
        if (first < 0) {
          first = now
          ex?.responseStarted(200)
        }
        ex?.contentToken()
        if (finish === null) return
        inflight.delete(r)
        const n = req.numOutput
        if (ex !== undefined) {
          ex.ticket.usage = { promptTokens: r.promptTokens, completionTokens: n }
          ex.ticket.finishReason = finish
          ex.end('ok')
        }
        outcomes.push({
          ...base(r),
          status: 'ok',
          ttftMs: first - r.arrivalMs,
          ...(n > 1 ? { tpotMs: (now - first) / (n - 1) } : {}),
          e2eMs: now - r.arrivalMs,
          outputTokens: n,
        })
      },
    }
    const req = new SimRequest({
      id: String(r.index),
      promptTokens: r.promptTokens,
      targetOutput: out.tokens,
      finishReason: out.finishReason,
      blockHashes: [],
      sink,
      arrival: clock.t,
    })
    ep.engine.submit(req)
  }

  const dispatch = (r: PlanRequest, t: Ticket, lease: Lease) => {
    const ep = lease.endpoint as VirtualEndpoint
    const ex = new Exchange(t, clock, [])
    ex.observe(lease)
    ex.dispatched(ep.name)
    send(r, ep, t.maxTokens ?? r.maxTokens, ex)
  }

  const arrive = (r: PlanRequest) => {
    if (admission === undefined) {
      // a plain proxy: the least-loaded engine, whatever its state
      let best = eps[0]!
      for (const ep of eps)
        if (ep.engine.numRunning + ep.engine.numWaiting < best.engine.numRunning + best.engine.numWaiting)
          best = ep
      send(r, best, r.maxTokens, undefined)
      return
    }
    const t = new Ticket(`p${r.index}`, 'POST', '/v1/chat/completions', clock.t)
    t.generation = true
    t.api = 'chat'
    t.stream = true
    t.model = spec.profile.model
    t.tenant = r.tenant
    t.requestedClass = r.priority
    t.serviceTier = r.serviceTier
    t.demotable = r.demotable
    t.promptTokens = r.promptTokens
    t.maxTokens = r.maxTokens
    t.expectedOutputTokens = r.maxTokens
    t.itlMs = noGaps()
    const body = {
      model: spec.profile.model,
      max_tokens: r.maxTokens,
      stream: true,
      ...(r.serviceTier === undefined ? {} : { service_tier: r.serviceTier }),
    }
    const d = admission.decide({ ticket: t, body, pool, tenantWeight: 1 })
    if (d.kind === 'reject') return refuse(r, d.error.rejectReason ?? d.error.code)
    const w = new PlanWaiting(t, d.className, d.promptTokens, d.kvTokens, d.prediction, d.blocks)
    const placed = d.poolAdmission.place(w, t.tenant, d.weight, d.deadline, d.order)
    if (placed instanceof GatewayError) return refuse(r, placed.rejectReason ?? placed.code)
    if (placed !== w) return dispatch(r, t, placed as Lease)
    // queued: dispatched by admission's pump, or shed by its deadline timer (queue_timeout)
    // or its early refusal, all on the virtual clock
    queued.set(w, r)
    w.onSettle = (res) => {
      queued.delete(w)
      if (res instanceof GatewayError) refuse(r, res.rejectReason ?? res.code)
      else dispatch(r, t, res)
    }
  }

  const requests = planRequests(spec.workload, spec.ratePerS, spec.durationMs, spec.seed)
  let next = requests.next()
  const scrapeMs = spec.pool.scrape_interval_ms
  let nextScrape = 0
  const stopAt = spec.durationMs + spec.drainMs
  for (;;) {
    // the next event: an arrival, the end of a step, a timer of admission's, a scrape
    let t = next.done ? Number.POSITIVE_INFINITY : next.value.arrivalMs
    for (const ep of eps) if (ep.stepEndsAt !== undefined && ep.stepEndsAt < t) t = ep.stepEndsAt
    if (clock.nextTimerAt < t) t = clock.nextTimerAt
    const busy = inflight.size > 0 || queued.size > 0
    if (admission !== undefined && busy && nextScrape < t) t = nextScrape
    if (!Number.isFinite(t) || t > stopAt) break
    clock.t = t
    for (const ep of eps) {
      if (ep.stepEndsAt !== t) continue
      ep.stepEndsAt = undefined
      ep.engine.finishStep(t)
    }
    if (admission !== undefined && t >= nextScrape) {
      for (const ep of eps) ep.scrape()
      // as the gateway does when a scrape lands: facts to the estimator, then dispatch
      admission.pumpAll()
      nextScrape = t + scrapeMs
    }
    while (!next.done && next.value.arrivalMs <= t) {
      arrive(next.value)
      next = requests.next()
    }
    // what admission scheduled for now (its dispatcher, as the gateway's setImmediate) and
    // its deadlines due; then the dispatcher once more, whatever was scheduled: a real
    // gateway's event loop turns many times per engine step (each streamed chunk), and the
    // plan's instants stand for them (dispatching only when admission asked refused 13.5% at
    // 19 req/s on an 8B H100 where the real gateway, time-scaled, refused 7.9%; this, 8.4%)
    clock.runDue()
    pa?.pump()
    for (const ep of eps) {
      if (ep.stepEndsAt !== undefined || !ep.engine.hasWork) continue
      const d = ep.engine.beginStep(t)
      if (d !== null) ep.stepEndsAt = t + d
    }
  }
  // cut at the end of the drain: what is still queued or running failed
  for (const [w, r] of queued) if (w.cancel()) outcomes.push({ ...base(r), status: 'failed', reason: 'cut' })
  for (const r of inflight) outcomes.push({ ...base(r), status: 'failed', reason: 'cut' })
  admission?.close()
  const cpuMs = performance.now() - started
  const summary = summarizeOutcomes(outcomes, spec.ratePerS, spec.durationMs, cpuMs, spec.sloClass)
  return admission === undefined ? summary : { ...summary, engineFacts: eps.map((ep) => ep.facts.state()) }
}

function base(r: PlanRequest) {
  return { className: r.className, promptTokens: r.promptTokens, outputTokens: 0, slo: r.slo }
}
