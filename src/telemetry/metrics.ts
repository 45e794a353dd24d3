/**
 * The prom-client metrics of the telemetry module, created once on the given registry.
 * Names, labels and meanings are documented in docs/metrics.md. Base units (seconds,
 * tokens, currency units); counters end in `_total`.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { GatewayConfig } from '../config/schema.js'
import { FastCounter } from './fast-counter.js'
import { FastHistogram } from './fast-histogram.js'
import {
  BATCH_SIZE_EDGES,
  HTTP_DURATION_EDGES_S,
  latencyEdges,
  PREDICTION_ERROR_EDGES,
} from './histogram-edges.js'
import { METRICS } from './names.js'

const CMT = ['class', 'model', 'tenant'] as const
const CM = ['class', 'model'] as const
const LATENCY = ['class', 'model', 'prompt_len', 'output_len'] as const

/**
 * `onCollect` runs when the registry is read, before any of these metrics is serialised
 * (it is the collect hook of the first one): scrape-time updates go there.
 */
export function createMetrics(config: GatewayConfig, registry: Registry, onCollect: () => void = () => {}) {
  const registers = [registry]
  const edges = latencyEdges(config)
  // Counters incremented on the request path use FastCounter (fast-counter.ts): prom-client's
  // hashes the label set on every increment. Backend counters (sampled) stay prom-client's.
  const counter = <T extends string>(name: string, help: string, labelNames: readonly T[]) =>
    new FastCounter<T>({ name, help, labelNames, registry })
  const backendCounter = <T extends string>(name: string, help: string, labelNames: readonly T[]) =>
    new Counter<T>({ name, help, labelNames, registers })
  // Histograms observed on the request path use the allocation-free FastHistogram
  // (fast-histogram.ts): prom-client's hashes the label set on every observation.
  const histogram = <T extends string>(
    name: string,
    help: string,
    labelNames: readonly T[],
    buckets: readonly number[],
  ) => new FastHistogram<T>({ name, help, labelNames, buckets, registry })

  return {
    edges,
    requests: new FastCounter<(typeof CMT)[number] | 'outcome'>({
      name: METRICS.requests,
      help: 'Requests finished, by outcome (ok, upstream_error, rejected, invalid, failed, cancelled).',
      labelNames: [...CMT, 'outcome'],
      registry,
      collect: onCollect,
    }),
    goodRequests: counter(
      METRICS.goodRequests,
      "Requests that succeeded and met every SLO of their class (goodput's numerator).",
      CMT,
    ),
    goodTokens: counter(METRICS.goodTokens, 'Output tokens of good requests.', CMT),
    sloMissed: counter(
      METRICS.sloMissed,
      'Successful requests that missed an SLO of their class, per SLO missed (slo=ttft|tpot|e2e).',
      [...CM, 'slo'],
    ),
    missedRequests: counter(
      METRICS.missedRequests,
      'Successful requests that missed at least one SLO of their class (once per request; by SLO: slo_missed_total).',
      CMT,
    ),
    rejected: counter(
      METRICS.rejected,
      'Requests refused by the gateway (capacity, quota, draining), by reason.',
      [...CMT, 'reason'],
    ),
    requestsByPromptLen: counter(
      METRICS.requestsByPromptLen,
      'Offered requests by prompt-length bucket and verdict (good, missed, rejected, failed, cancelled): refusal rate, goodput and attainment per bucket, so a policy that wins by refusing long prompts shows as such.',
      ['class', 'prompt_len', 'verdict'],
    ),
    goodTokensByPromptLen: counter(
      METRICS.goodTokensByPromptLen,
      'Output tokens of good requests by prompt-length bucket (goodput in tokens/s per bucket).',
      ['class', 'prompt_len'],
    ),
    degraded: counter(METRICS.degraded, 'Degrade actions applied to admitted requests, by action.', [
      ...CM,
      'action',
    ]),
    degradedRequests: counter(
      METRICS.degradedRequests,
      'Admitted requests with at least one degrade action.',
      CM,
    ),
    errors: counter(
      METRICS.errors,
      'Admitted requests that failed, by kind (upstream_5xx, upstream_429, upstream_timeout, ...); kind=upstream_4xx: client errors, the upstream refused the input.',
      [...CM, 'kind'],
    ),
    tokens: counter(METRICS.tokens, 'Tokens processed by the model servers, by kind (prompt, completion).', [
      ...CMT,
      'kind',
    ]),
    cost: counter(
      METRICS.cost,
      'Model-server cost in the currency of backends.pools[].cost_per_hour, attributed to class and tenant by tokens.',
      ['pool', 'class', 'tenant'],
    ),
    ttft: histogram(
      METRICS.ttft,
      'Time to first token of successful streamed requests: received to first content token relayed.',
      LATENCY,
      edges.ttft,
    ),
    tpot: histogram(
      METRICS.tpot,
      'Time per output token after the first, (E2E - TTFT) / (output tokens - 1), successful streamed requests.',
      LATENCY,
      edges.tpot,
    ),
    itl: histogram(
      METRICS.itl,
      'Gaps between consecutive content chunks relayed, successful streamed requests.',
      CM,
      edges.itl,
    ),
    e2e: histogram(
      METRICS.e2e,
      'End-to-end latency of successful requests: received to response finished.',
      LATENCY,
      edges.e2e,
    ),
    queueWait: histogram(
      METRICS.queueWait,
      "Time from arrival to dispatch (or to a queue_timeout refusal) in the gateway's queue.",
      CM,
      edges.queueWait,
    ),
    predictionError: histogram(
      METRICS.predictionError,
      'TTFT estimator error |predicted - actual| / actual, for requests with both.',
      CM,
      [...PREDICTION_ERROR_EDGES],
    ),
    queueDepth: new Gauge<'class' | 'pool'>({
      name: METRICS.queueDepth,
      help: "Requests waiting in the gateway's class queues.",
      labelNames: ['class', 'pool'],
      registers,
    }),
    inflight: new Gauge<'class' | 'pool'>({
      name: METRICS.inflight,
      help: 'Requests dispatched to a model server and not yet finished.',
      labelNames: ['class', 'pool'],
      registers,
    }),
    ttftMargin: new Gauge<'class' | 'pool'>({
      name: METRICS.ttftMargin,
      help: "The margin admission keeps under a class's TTFT objective (configured floor, widened while admitted requests miss).",
      labelNames: ['class', 'pool'],
      registers,
    }),
    tpotMargin: new Gauge<'class' | 'pool'>({
      name: METRICS.tpotMargin,
      help: "The margin the decode guard keeps under a class's TPOT objective (configured floor, widened while admitted streams miss).",
      labelNames: ['class', 'pool'],
      registers,
    }),
    sloThreshold: new Gauge<'class' | 'slo'>({
      name: METRICS.sloThreshold,
      help: 'Configured SLO thresholds per class (slo=ttft|tpot|e2e).',
      labelNames: ['class', 'slo'],
      registers,
    }),
    httpRequests: counter(METRICS.httpRequests, 'HTTP requests answered, every route.', [
      'route',
      'method',
      'status',
    ]),
    httpDuration: histogram(
      METRICS.httpDuration,
      'HTTP request duration, every route.',
      ['route', 'method'],
      [...HTTP_DURATION_EDGES_S],
    ),
    backendPreemptions: backendCounter(
      METRICS.backendPreemptions,
      "Requests preempted by the model server (from the engine's own counter).",
      ['pool', 'backend'],
    ),
    backendPrefixQueries: backendCounter(
      METRICS.backendPrefixQueries,
      'Prefix-cache queries reported by the model server (vLLM counts tokens).',
      ['pool', 'backend'],
    ),
    backendPrefixHits: backendCounter(
      METRICS.backendPrefixHits,
      'Prefix-cache hits reported by the model server (same unit as queries).',
      ['pool', 'backend'],
    ),
    backendBusy: backendCounter(
      METRICS.backendBusy,
      'Time the endpoint had a non-empty running batch, sampled; rate() is the busy fraction.',
      ['pool', 'backend'],
    ),
    backendBatchSize: new Histogram<'pool'>({
      name: METRICS.backendBatchSize,
      help: "Requests in an endpoint's running batch, sampled at a fixed interval.",
      labelNames: ['pool'],
      buckets: [...BATCH_SIZE_EDGES],
      registers,
    }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>
