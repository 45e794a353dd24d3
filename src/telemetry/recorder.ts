/**
 * Turns one finished Ticket into metric updates, rolling-window samples and cost tokens.
 * Every label value is bounded here (class, model, tenant, reason, kind, action); children
 * are cached so the request path does not build label objects.
 */
import type { GatewayConfig } from '../config/schema.js'
import type { Ticket } from '../ticket.js'
import { BoundedLabel, OTHER } from './bounded-label.js'
import { type CostAttributor, type CostShare, IDLE } from './cost.js'
import { outputLengthBucket, promptLengthBucket } from './length-buckets.js'
import type { Metrics } from './metrics.js'
import type { RollingWindows } from './rolling-windows.js'
import { SeriesCache } from './series-cache.js'
import type { TenantLabels } from './tenant-labels.js'
import { isServerErrorKind, measure, sanitizeLabel, verdictWith } from './verdict.js'

/** Reject reasons known today; others pass through a cap. */
const KNOWN_REASONS = ['ttft_slo', 'queue_full', 'queue_timeout', 'kv_exhausted', 'no_backend', 'draining']
const KNOWN_ACTIONS = ['cap_max_tokens', 'fallback_model', 'reduce_reasoning', 'single_choice']
const KNOWN_KINDS = [
  'upstream_4xx',
  'upstream_5xx',
  'upstream_unreachable',
  'upstream_reset',
  'upstream_timeout',
  'upstream_stream_failed',
  'internal',
]
/** Distinct values beyond the known ones before `other`. */
const EXTRA_REASONS = 32
const EXTRA_MODELS = 16
const EXTRA_ROUTES = 64
const ACTION_DETAIL = /[:=(]/
/** The model label of a request that named none (e.g. invalid JSON). */
const NO_MODEL = 'none'

type Inc = { inc(v?: number): void }
type Obs = { observe(v: number): void }

export class Recorder {
  private readonly config: GatewayConfig
  private readonly m: Metrics
  private readonly tenants: TenantLabels
  private readonly windows: RollingWindows
  private readonly cost: CostAttributor
  private readonly classLabel: BoundedLabel
  private readonly modelLabel: BoundedLabel
  private readonly reasonLabel = new BoundedLabel(KNOWN_REASONS, EXTRA_REASONS)
  private readonly actionLabel = new BoundedLabel(KNOWN_ACTIONS, EXTRA_REASONS)
  private readonly kindLabel = new BoundedLabel(KNOWN_KINDS, EXTRA_REASONS)
  private readonly routeLabel = new BoundedLabel([], EXTRA_ROUTES)
  private readonly methodLabel = new BoundedLabel(
    ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH'],
    0,
  )

  private readonly requests: SeriesCache<string, Inc>
  private readonly good: SeriesCache<string, Inc>
  private readonly goodTokens: SeriesCache<string, Inc>
  private readonly missed: SeriesCache<string, Inc>
  private readonly rejected: SeriesCache<string, Inc>
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

  constructor(opts: {
    config: GatewayConfig
    metrics: Metrics
    tenants: TenantLabels
    windows: RollingWindows
    cost: CostAttributor
  }) {
    this.config = opts.config
    this.m = opts.metrics
    this.tenants = opts.tenants
    this.windows = opts.windows
    this.cost = opts.cost
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
    this.rejected = new SeriesCache(m.rejected, [...cmt, 'reason'])
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

  record(t: Ticket, now: number): void {
    const cls = this.classLabel.value(t.class)
    const model = this.modelLabel.value(t.model ?? NO_MODEL)
    const tenant = this.tenants.observe(t.tenant, now)
    const meas = measure(t)
    const verdict = verdictWith(t, this.config.classes[t.class], meas)
    this.requests.get([cls, model, tenant, t.outcome]).inc()

    // Tokens the model servers processed: the prompt when the server counted it (usage) or
    // accepted the request (a 2xx/3xx answer began); a request the server refused or that
    // was cancelled before any answer processed none we can vouch for.
    const accepted = t.usage !== undefined || (t.dispatchedAt !== undefined && t.status > 0 && t.status < 400)
    const prompt = accepted ? Math.max(0, meas.promptTokens) : 0
    const completion = Math.max(0, meas.outputTokens)
    if (prompt > 0) this.tokens.get([cls, model, tenant, 'prompt']).inc(prompt)
    if (completion > 0) this.tokens.get([cls, model, tenant, 'completion']).inc(completion)

    let serverError = false
    switch (verdict.kind) {
      case 'good':
        this.good.get([cls, model, tenant]).inc()
        this.goodTokens.get([cls, model, tenant]).inc(completion)
        break
      case 'missed':
        for (const slo of verdict.missed) this.missed.get([cls, model, slo]).inc()
        break
      case 'rejected':
        this.rejected.get([cls, model, tenant, this.reasonLabel.value(verdict.reason)]).inc()
        break
      case 'failed': {
        const kind = this.kindLabel.value(verdict.errorKind)
        serverError = isServerErrorKind(kind)
        this.errors.get([cls, model, kind]).inc()
        break
      }
      default:
        break
    }

    const admitted = verdict.kind !== 'rejected' && verdict.kind !== 'invalid'
    const degraded = admitted && t.degraded.length > 0
    if (degraded) {
      this.degradedRequests.get([cls, model]).inc()
      for (const a of t.degraded) this.degraded.get([cls, model, this.actionLabel.value(actionName(a))]).inc()
    }

    if (t.outcome === 'ok') {
      const lat = [cls, model, promptLengthBucket(meas.promptTokens), outputLengthBucket(completion)]
      if (meas.ttftS !== undefined) this.ttft.get(lat).observe(meas.ttftS)
      if (meas.tpotS !== undefined) this.tpot.get(lat).observe(meas.tpotS)
      if (meas.e2eS !== undefined) this.e2e.get(lat).observe(meas.e2eS)
      if (t.itlMs.length > 0) {
        const itl = this.itl.get([cls, model])
        for (const ms of t.itlMs) itl.observe(ms / 1000)
      }
      const predicted = t.predictedTtftMs
      if (predicted !== undefined && meas.ttftS !== undefined && meas.ttftS > 0) {
        this.predictionError.get([cls, model]).observe(Math.abs(predicted / 1000 - meas.ttftS) / meas.ttftS)
      }
    }

    const wait = queueWaitS(t, verdict.kind === 'rejected' ? verdict.reason : undefined)
    if (wait !== undefined) this.queueWait.get([cls, model]).observe(wait)

    if (t.pool !== undefined && prompt + completion > 0)
      this.cost.addTokens(now, t.pool, cls, tenant, prompt + completion)
    else this.cost.tick(now)

    this.windows.of(cls).record(now, {
      verdict,
      degraded,
      serverError,
      ttftS: t.outcome === 'ok' ? meas.ttftS : undefined,
      tpotS: t.outcome === 'ok' ? meas.tpotS : undefined,
      outputTokens: completion,
      tokens: prompt + completion,
    })
  }

  /** One HTTP request on any route (`route` is the route pattern, not the raw URL). */
  observeHttp(route: string, method: string, status: number, seconds: number): void {
    const r = this.routeLabel.value(route)
    const mt = this.methodLabel.value(method.toUpperCase())
    this.httpRequests.get([r, mt, String(status)]).inc()
    if (Number.isFinite(seconds) && seconds >= 0) this.httpDuration.get([r, mt]).observe(seconds)
  }

  /** A share of cost from the attributor. Tenants that lost their label since go to `other`. */
  bookCost(share: CostShare, now: number): void {
    const tenant =
      share.tenant === IDLE || share.tenant === OTHER ? share.tenant : this.tenants.current(share.tenant)
    this.costs.get([share.pool, share.class, tenant]).inc(share.amount)
    if (share.class !== IDLE) this.windows.of(share.class).addCost(now, share.amount)
  }

  /** Remove the series of tenants that lost their label. */
  evict(tenants: readonly string[]): void {
    for (const t of tenants) {
      for (const c of [this.requests, this.good, this.goodTokens, this.rejected, this.tokens, this.costs]) {
        c.removeWhere('tenant', t)
      }
    }
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
