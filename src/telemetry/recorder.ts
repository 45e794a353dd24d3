/**
 * Turns one finished Ticket into metric updates, rolling-window samples and cost tokens.
 * Every label value is bounded here (class, model, tenant, reason, kind, action); children
 * are cached so the request path does not build label objects.
 */
import type { GatewayConfig } from '../config/schema.js'
import { objectivesOf } from '../objectives.js'
import type { Ticket } from '../ticket.js'
import { BoundedLabel, OTHER } from './bounded-label.js'
import { type CostAttributor, type CostShare, IDLE } from './cost.js'
import {
  EXTRA_MODELS,
  EXTRA_REASONS,
  EXTRA_ROUTES,
  KNOWN_ACTIONS,
  KNOWN_KINDS,
  KNOWN_METHODS,
  KNOWN_REASONS,
} from './label-vocab.js'
import { outputLengthBucket, promptLengthBucket } from './length-buckets.js'
import type { Metrics } from './metrics.js'
import {
  type Inc,
  latencySeriesOf,
  type ModelSeries,
  type Obs,
  type TenantSeries,
} from './recorder-series.js'
import type { RollingWindows } from './rolling-windows.js'
import { SeriesCache } from './series-cache.js'
import type { TenantLabels } from './tenant-labels.js'
import type { TenantWindows } from './tenant-windows.js'
import {
  CLIENT_ERROR_KIND,
  isServerErrorKind,
  measure,
  sanitizeLabel,
  type Verdict,
  verdictWith,
} from './verdict.js'

const ACTION_DETAIL = /[:=(]/
/** The model label of a request that named none (e.g. invalid JSON). */
const NO_MODEL = 'none'
const NO_ACTIONS: readonly string[] = []

export class Recorder {
  private readonly config: GatewayConfig
  private readonly m: Metrics
  private readonly tenants: TenantLabels
  private readonly windows: RollingWindows
  private readonly cost: CostAttributor
  private readonly tenantWindows: TenantWindows | undefined
  private readonly classLabel: BoundedLabel
  private readonly modelLabel: BoundedLabel
  private readonly reasonLabel = new BoundedLabel(KNOWN_REASONS, EXTRA_REASONS)
  private readonly actionLabel = new BoundedLabel(KNOWN_ACTIONS, EXTRA_REASONS)
  private readonly kindLabel = new BoundedLabel(KNOWN_KINDS, EXTRA_REASONS)
  private readonly routeLabel = new BoundedLabel([], EXTRA_ROUTES)
  private readonly methodLabel = new BoundedLabel(KNOWN_METHODS, 0)
  private readonly knownMethods = new Set(KNOWN_METHODS)

  private readonly requests: SeriesCache<string, Inc>
  private readonly good: SeriesCache<string, Inc>
  private readonly goodTokens: SeriesCache<string, Inc>
  private readonly missed: SeriesCache<string, Inc>
  private readonly missedRequests: SeriesCache<string, Inc>
  private readonly rejected: SeriesCache<string, Inc>
  private readonly byPromptLen: SeriesCache<string, Inc>
  private readonly goodTokensByPromptLen: SeriesCache<string, Inc>
  private readonly degraded: SeriesCache<string, Inc>
  private readonly degradedRequests: SeriesCache<string, Inc>
  private readonly errors: SeriesCache<string, Inc>
  private readonly tokens: SeriesCache<string, Inc>
  private readonly costs: SeriesCache<string, Inc>
  private readonly ttft: SeriesCache<string, Obs>
  private readonly tpot: SeriesCache<string, Obs>
  private readonly e2e: SeriesCache<string, Obs>
  private readonly itl: SeriesCache<string, Obs>
  private readonly queueWait: SeriesCache<string, Obs>
  private readonly predictionError: SeriesCache<string, Obs>
  private readonly httpRequests: SeriesCache<string, Inc>
  private readonly httpDuration: SeriesCache<string, Obs>
  /** class -> model -> tenant -> children (cleared on evict). */
  private readonly tenantSeries = new Map<string, Map<string, Map<string, TenantSeries>>>()
  /** class -> model -> children. */
  private readonly modelSeries = new Map<string, Map<string, ModelSeries>>()

  constructor(opts: {
    config: GatewayConfig
    metrics: Metrics
    tenants: TenantLabels
    windows: RollingWindows
    cost: CostAttributor
    /** Tokens and cost per tenant over 5 minutes, for the dashboard. */
    tenantWindows?: TenantWindows
  }) {
    this.config = opts.config
    this.m = opts.metrics
    this.tenants = opts.tenants
    this.windows = opts.windows
    this.cost = opts.cost
    this.tenantWindows = opts.tenantWindows
    this.classLabel = new BoundedLabel(Object.keys(this.config.classes), 0)
    const models = this.config.backends.pools
      .flatMap((p) => [...p.models, ...p.aliases])
      .filter((m) => m !== '*')
    this.modelLabel = new BoundedLabel([...models, NO_MODEL], EXTRA_MODELS)
    const m = this.m
    const cmt = ['class', 'model', 'tenant']
    const cm = ['class', 'model']
    const lat = ['class', 'model', 'prompt_len', 'output_len']
    this.requests = new SeriesCache(m.requests, [...cmt, 'outcome'])
    this.good = new SeriesCache(m.goodRequests, cmt)
    this.goodTokens = new SeriesCache(m.goodTokens, cmt)
    this.missed = new SeriesCache(m.sloMissed, [...cm, 'slo'])
    this.missedRequests = new SeriesCache(m.missedRequests, cmt)
    this.rejected = new SeriesCache(m.rejected, [...cmt, 'reason'])
    this.byPromptLen = new SeriesCache(m.requestsByPromptLen, ['class', 'prompt_len', 'verdict'])
    this.goodTokensByPromptLen = new SeriesCache(m.goodTokensByPromptLen, ['class', 'prompt_len'])
    this.degraded = new SeriesCache(m.degraded, [...cm, 'action'])
    this.degradedRequests = new SeriesCache(m.degradedRequests, cm)
    this.errors = new SeriesCache(m.errors, [...cm, 'kind'])
    this.tokens = new SeriesCache(m.tokens, [...cmt, 'kind'])
    this.costs = new SeriesCache(m.cost, ['pool', 'class', 'tenant'])
    this.ttft = new SeriesCache(m.ttft, lat)
    this.tpot = new SeriesCache(m.tpot, lat)
    this.e2e = new SeriesCache(m.e2e, lat)
    this.itl = new SeriesCache(m.itl, cm)
    this.queueWait = new SeriesCache(m.queueWait, cm)
    this.predictionError = new SeriesCache(m.predictionError, cm)
    this.httpRequests = new SeriesCache(m.httpRequests, ['route', 'method', 'status'])
    this.httpDuration = new SeriesCache(m.httpDuration, ['route', 'method'])
  }

  /** Count one finished request; returns its verdict (for the request's log line). */
  record(t: Ticket, now: number): Verdict {
    const cls = this.classLabel.value(t.class)
    const model = this.modelLabel.value(t.model ?? NO_MODEL)
    const tenant = this.tenants.observe(t.tenant, now)
    const meas = measure(t)
    const verdict = verdictWith(t, objectivesOf(t, this.config.classes), meas)
    const perTenant = this.tenantSeriesOf(cls, model, tenant)
    let requests = perTenant.byOutcome.get(t.outcome)
    if (requests === undefined) {
      requests = this.requests.get4(cls, model, tenant, t.outcome)
      perTenant.byOutcome.set(t.outcome, requests)
    }
    requests.inc()

    // Tokens the model servers processed: the prompt when the server counted it (usage) or
    // accepted the request (a 2xx/3xx answer began); a request the server refused or that
    // was cancelled before any answer processed none we can vouch for.
    const accepted = t.usage !== undefined || (t.dispatchedAt !== undefined && t.status > 0 && t.status < 400)
    const prompt = accepted ? Math.max(0, meas.promptTokens) : 0
    const completion = Math.max(0, meas.outputTokens)
    if (prompt > 0) {
      if (perTenant.prompt === undefined) perTenant.prompt = this.tokens.get4(cls, model, tenant, 'prompt')
      perTenant.prompt.inc(prompt)
    }
    if (completion > 0) {
      if (perTenant.completion === undefined)
        perTenant.completion = this.tokens.get4(cls, model, tenant, 'completion')
      perTenant.completion.inc(completion)
    }

    let serverError = false
    switch (verdict.kind) {
      case 'good':
        if (perTenant.good === undefined) perTenant.good = this.good.get3(cls, model, tenant)
        if (perTenant.goodTokens === undefined)
          perTenant.goodTokens = this.goodTokens.get3(cls, model, tenant)
        perTenant.good.inc()
        perTenant.goodTokens.inc(completion)
        break
      case 'missed':
        if (perTenant.missed === undefined) perTenant.missed = this.missedRequests.get3(cls, model, tenant)
        perTenant.missed.inc()
        for (const slo of verdict.missed) this.missed.get3(cls, model, slo).inc()
        break
      case 'client_error':
        // Counted apart (errors_total{kind="upstream_4xx"}), never against availability.
        this.errors.get3(cls, model, CLIENT_ERROR_KIND).inc()
        break
      case 'rejected':
        this.rejected.get4(cls, model, tenant, this.reasonLabel.value(verdict.reason)).inc()
        break
      case 'failed': {
        const kind = this.kindLabel.value(verdict.errorKind)
        serverError = isServerErrorKind(kind)
        this.errors.get3(cls, model, kind).inc()
        break
      }
      default:
        break
    }

    // Offered load by prompt length (not invalid input, not the model server's 4xx on it).
    if (verdict.kind !== 'invalid' && verdict.kind !== 'client_error') {
      const pl = promptLengthBucket(meas.promptTokens)
      this.byPromptLen.get3(cls, pl, verdict.kind).inc()
      if (verdict.kind === 'good' && completion > 0) this.goodTokensByPromptLen.get2(cls, pl).inc(completion)
    }

    // Client errors are not offered load (as invalid requests): not counted as degraded.
    const admitted =
      verdict.kind !== 'rejected' && verdict.kind !== 'invalid' && verdict.kind !== 'client_error'
    const degraded = admitted && t.degraded.length > 0
    const actions = degraded ? t.degraded.map((a) => this.actionLabel.value(actionName(a))) : NO_ACTIONS
    if (degraded) {
      this.degradedRequests.get2(cls, model).inc()
      for (const a of actions) this.degraded.get3(cls, model, a).inc()
    }

    const perModel = this.modelSeriesOf(cls, model)
    if (t.outcome === 'ok') {
      const pl = promptLengthBucket(meas.promptTokens)
      const ol = outputLengthBucket(completion)
      const lat = latencySeriesOf(perModel, pl, ol)
      if (meas.ttftS !== undefined) {
        if (lat.ttft === undefined) lat.ttft = this.ttft.get4(cls, model, pl, ol)
        lat.ttft.observe(meas.ttftS)
      }
      if (meas.tpotS !== undefined) {
        if (lat.tpot === undefined) lat.tpot = this.tpot.get4(cls, model, pl, ol)
        lat.tpot.observe(meas.tpotS)
      }
      if (meas.e2eS !== undefined) {
        if (lat.e2e === undefined) lat.e2e = this.e2e.get4(cls, model, pl, ol)
        lat.e2e.observe(meas.e2eS)
      }
      const gaps = t.itlMs
      if (gaps.length > 0) {
        if (perModel.itl === undefined) perModel.itl = this.itl.get2(cls, model)
        const itl = perModel.itl
        for (let i = 0; i < gaps.length; i++) itl.observe(gaps[i]! / 1000)
      }
      const predicted = t.predictedTtftMs
      if (predicted !== undefined && meas.ttftS !== undefined && meas.ttftS > 0) {
        if (perModel.predictionError === undefined)
          perModel.predictionError = this.predictionError.get2(cls, model)
        perModel.predictionError.observe(Math.abs(predicted / 1000 - meas.ttftS) / meas.ttftS)
      }
    }

    const wait = queueWaitS(t, verdict.kind === 'rejected' ? verdict.reason : undefined)
    if (wait !== undefined) {
      if (perModel.queueWait === undefined) perModel.queueWait = this.queueWait.get2(cls, model)
      perModel.queueWait.observe(wait)
    }

    if (t.poolName !== undefined && prompt + completion > 0)
      this.cost.addTokens(now, t.poolName, cls, tenant, prompt + completion)
    else this.cost.tick(now)
    this.tenantWindows?.addTokens(now, tenant, prompt + completion)

    this.windows.of(cls).record(now, {
      verdict,
      degraded,
      degradedActions: actions,
      serverError,
      ttftS: t.outcome === 'ok' ? meas.ttftS : undefined,
      tpotS: t.outcome === 'ok' ? meas.tpotS : undefined,
      outputTokens: completion,
      tokens: prompt + completion,
      predictedTtftMs: t.outcome === 'ok' ? t.predictedTtftMs : undefined,
      pool: t.poolName,
    })
    return verdict
  }

  /** One HTTP request on any route (`route` is the route pattern, not the raw URL). */
  observeHttp(route: string, method: string, status: number, seconds: number): void {
    const r = this.routeLabel.value(route)
    // Methods arrive upper-case: skip the case conversion (an allocation) for the known ones.
    const mt = this.knownMethods.has(method) ? method : this.methodLabel.value(method.toUpperCase())
    this.httpRequests.get3(r, mt, String(status)).inc()
    if (Number.isFinite(seconds) && seconds >= 0) this.httpDuration.get2(r, mt).observe(seconds)
  }

  /** A share of cost from the attributor. Tenants that lost their label since go to `other`. */
  bookCost(share: CostShare, now: number): void {
    const tenant =
      share.tenant === IDLE || share.tenant === OTHER ? share.tenant : this.tenants.current(share.tenant)
    this.costs.get3(share.pool, share.class, tenant).inc(share.amount)
    if (tenant !== IDLE) this.tenantWindows?.addCost(now, tenant, share.amount)
    if (share.class !== IDLE) this.windows.of(share.class).addCost(now, share.amount)
  }

  private tenantSeriesOf(cls: string, model: string, tenant: string): TenantSeries {
    let byModel = this.tenantSeries.get(cls)
    if (byModel === undefined) {
      byModel = new Map()
      this.tenantSeries.set(cls, byModel)
    }
    let byTenant = byModel.get(model)
    if (byTenant === undefined) {
      byTenant = new Map()
      byModel.set(model, byTenant)
    }
    let s = byTenant.get(tenant)
    if (s === undefined) {
      s = {
        byOutcome: new Map(),
        prompt: undefined,
        completion: undefined,
        good: undefined,
        goodTokens: undefined,
        missed: undefined,
      }
      byTenant.set(tenant, s)
    }
    return s
  }

  private modelSeriesOf(cls: string, model: string): ModelSeries {
    let byModel = this.modelSeries.get(cls)
    if (byModel === undefined) {
      byModel = new Map()
      this.modelSeries.set(cls, byModel)
    }
    let s = byModel.get(model)
    if (s === undefined) {
      s = { itl: undefined, queueWait: undefined, predictionError: undefined, latency: new Map() }
      byModel.set(model, s)
    }
    return s
  }

  /** Remove the series of tenants that lost their label. */
  evict(tenants: readonly string[]): void {
    // Cached children of evicted series would bring them back: look everything up afresh.
    this.tenantSeries.clear()
    const caches = [
      this.requests,
      this.good,
      this.goodTokens,
      this.missedRequests,
      this.rejected,
      this.tokens,
      this.costs,
    ]
    for (const t of tenants) for (const c of caches) c.removeWhere('tenant', t)
    this.tenantWindows?.evict(tenants)
  }
}

/** `cap_max_tokens:512` -> `cap_max_tokens`. */
function actionName(raw: string): string {
  const i = raw.search(ACTION_DETAIL)
  return sanitizeLabel(i < 0 ? raw : raw.slice(0, i))
}

/** Arrival to dispatch; for a queue_timeout refusal, arrival to the refusal. */
function queueWaitS(t: Ticket, rejectReason: string | undefined): number | undefined {
  if (t.dispatchedAt !== undefined) return Math.max(0, t.dispatchedAt - t.arrivedAt) / 1000
  if (rejectReason === 'queue_timeout' && t.finishedAt !== undefined) {
    return Math.max(0, t.finishedAt - t.arrivedAt) / 1000
  }
  return undefined
}
