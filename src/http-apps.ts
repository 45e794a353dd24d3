/**
 * buildHttpApps(config, deps): the public and admin Fastify instances, their routes wired
 * to the request's path (src/stages.ts, run by proxy/pipeline.ts). It never listens
 * (listeners.ts does), so tests drive it with `inject` or on port 0.
 */

import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
  type FastifyBaseLogger as Logger,
} from 'fastify'
import type { Registry } from 'prom-client'
import { registerAdminRoutes } from './admin.js'
import { adminTokenDigest, protectAdmin } from './admin-auth.js'
import { answerAdminErrors } from './admin-errors.js'
import { type AdmissionControl, PassThrough } from './admission/index.js'
import type { Backends } from './backends/types.js'
import { clientErrorHandler } from './client-errors.js'
import type { Clock } from './clock.js'
import type { GatewayConfig } from './config/schema.js'
import { DASHBOARD_PUBLIC_PATHS, dashboardData, registerDashboard } from './dashboard/index.js'
import { GatewayError } from './errors.js'
import type { ExchangeObserver } from './exchange.js'
import { fastifyError } from './fastify-errors.js'
import { jsonBodyParser } from './openai/json-body.js'
import { TokenEstimator } from './openai/token-estimator.js'
import { installOverloadGuard } from './overload-guard.js'
import { Accounting, type RequestRecorder } from './proxy/account.js'
import { requestId, routeHandlers } from './proxy/handlers.js'
import { listModels } from './proxy/models.js'
import { Pipeline } from './proxy/pipeline.js'
import type { TelemetryHistory } from './telemetry/index.js'
import { TenantDirectory } from './tenants/directory.js'
import type { Limiter } from './tenants/limiter.js'
import { tenantLimiter } from './tenants/limiter-registry.js'

export interface GatewayDeps {
  readonly clock: Clock
  readonly logger: Logger
  readonly registry: Registry
  readonly backends: Backends
  readonly recorder: RequestRecorder
  /** Admission control; undefined makes a plain proxy. */
  readonly admission?: AdmissionControl | undefined
  /** Prompt-token estimates, learned from the usage servers report (a new one by default). */
  readonly tokens?: TokenEstimator | undefined
  /** More observers of every exchange, heard before accounting (tests count events here). */
  readonly observers?: readonly ExchangeObserver[] | undefined
  /** The tenants (identify); built from the config by default. */
  readonly tenants?: TenantDirectory | undefined
  /** The tenants' limiter; by default the config's `limits` store, closed with the app (the caller closes one it gives). */
  readonly limiter?: Limiter | undefined
  /** Extra sections for GET /admin/state, each read (and awaited) when asked. */
  readonly state?: Record<string, () => unknown>
  /** The telemetry's last 5 minutes, for GET /dashboard/data (undefined: telemetry off). */
  readonly history?: () => TelemetryHistory | undefined
}

export interface HttpApps {
  /** Public listener: the OpenAI-compatible API. */
  readonly app: FastifyInstance
  /** Admin listener: /metrics, /healthz, /readyz, /admin/state, /dashboard. */
  readonly admin: FastifyInstance
  /** Runs the request's path; knows what is in flight. */
  readonly pipeline: Pipeline
  readonly config: GatewayConfig
  /** Ready to serve: not draining and a backend has fresh load data (/readyz). */
  ready(): boolean
  /** Start refusing new requests (503) and fail /readyz; in-flight requests go on. */
  drain(): void
  /** The event loop's lag now, ms (the overload guard's measure). */
  eventLoopLagMs(): number
  /** Resolves when no request is in flight. */
  whenIdle(): Promise<void>
}

/** How often the dashboard page asks for its data. */
const DASHBOARD_REFRESH_MS = 1_000

export function buildHttpApps(config: GatewayConfig, deps: GatewayDeps): HttpApps {
  const limit = config.server.body_limit_bytes
  // slowloris: the headers, then the whole request, must arrive in time (Node checks every
  // connection each connectionsCheckingInterval); a response may stream for longer
  const requestMs = config.server.request_timeout_ms
  const headersMs = Math.min(config.server.headers_timeout_ms, requestMs)
  // both listeners: the logger (one log line per request comes from the accounting stage
  // instead), the body limit, and the same defences against slow and malformed clients
  const defences = () => ({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: limit,
    requestTimeout: requestMs,
    http: {
      headersTimeout: headersMs,
      requestTimeout: requestMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersMs / 4))),
    },
    clientErrorHandler: clientErrorHandler(deps.logger, { headersMs, requestMs }),
  })
  const app = Fastify({
    ...defences(),
    genReqId: (req) => requestId(req.headers['x-request-id']),
    // no child logger per request: nothing logs through request.log (the accounting stage
    // writes the request's line, with its id), and a pino child a request costs ~1% of the CPU
    childLoggerFactory: (logger) => logger,
    return503OnClosing: false,
    forceCloseConnections: 'idle',
  })
  app.server.maxConnections = config.server.max_connections
  const tokens = deps.tokens ?? new TokenEstimator()
  const limiter = deps.limiter ?? tenantLimiter(config.limits, { clock: deps.clock, logger: deps.logger })
  if (deps.limiter === undefined) app.addHook('onClose', () => limiter.close())
  const accounting = new Accounting(deps.recorder, deps.logger)
  // the last shed summary is written at close, not lost with its unref'd timer
  app.addHook('onClose', async () => accounting.flush())
  const pipeline = new Pipeline({
    backends: deps.backends,
    admission: deps.admission ?? new PassThrough(),
    tokens,
    clock: deps.clock,
    logger: deps.logger,
    defaultMaxTokens: config.admission.default_max_tokens,
    classes: config.classes,
    tenants: deps.tenants ?? TenantDirectory.fromConfig(config),
    limiter,
    limits: config.limits,
    observers: [tokens, ...(deps.observers ?? []), accounting],
  })
  const handlers = routeHandlers(pipeline)
  const guard = installOverloadGuard(app, pipeline, config.server.shed_event_loop_delay_ms)
  app.addHook('onClose', async () => guard.close())

  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const r = pipeline.begin(request, reply, 'json')
    let gwErr = err instanceof GatewayError ? err : fastifyError(err, request, limit)
    if (gwErr === undefined) {
      deps.logger.error({ err, reqId: request.id }, 'unhandled error')
      gwErr = new GatewayError('GW_ERR_INTERNAL', {}, { cause: err })
    }
    pipeline.refuse(r, gwErr)
  })
  app.setNotFoundHandler((request, reply) => {
    pipeline.refuse(
      pipeline.begin(request, reply, 'json'),
      new GatewayError('GW_ERR_ROUTE_NOT_FOUND', {
        method: request.method,
        url: request.url.split('?')[0] ?? '',
      }),
    )
  })

  // The OpenAI routes take JSON only: anything else is a 415, not a string body. JSON is
  // parsed by the gateway's parser, which keeps the bytes for forward (openai/json-body.ts).
  app.removeContentTypeParser('text/plain')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, jsonBodyParser)
  for (const route of ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/embeddings'])
    app.post(route, handlers.json(route))
  app.get('/v1/models', (_request, reply) => listModels(deps.backends, reply))
  // Everything else under /v1 is forwarded as it came, body streamed unparsed.
  app.register(async (raw) => {
    raw.removeAllContentTypeParsers()
    raw.addContentTypeParser('*', (_req, payload, done) => done(null, payload))
    raw.all('/v1/*', handlers.raw('/v1/*'))
  })

  const ready = () => !pipeline.draining && deps.backends.ready()
  // the admin listener: the same defences against slow and malformed clients, the same error bodies
  const admin = Fastify(defences())
  answerAdminErrors(admin, deps.logger, limit)
  const token = adminTokenDigest(config.server)
  if (token !== undefined) protectAdmin(admin, token, DASHBOARD_PUBLIC_PATHS)
  registerDashboard(admin, {
    tokenRequired: token !== undefined,
    data: async () =>
      dashboardData({
        classes: config.classes,
        draining: pipeline.draining,
        inflight: pipeline.inFlight,
        backends: deps.backends.state(),
        admission: deps.admission?.state(),
        history: deps.history?.(),
        refreshMs: DASHBOARD_REFRESH_MS,
      }),
  })
  registerAdminRoutes(admin, {
    registry: deps.registry,
    ready,
    draining: () => pipeline.draining,
    state: async () => ({
      draining: pipeline.draining,
      inflight: pipeline.inFlight,
      eventLoopLagMs: Math.round(guard.lagMs()),
      backends: deps.backends.state(),
      admission: deps.admission?.state(),
      ...Object.fromEntries(
        await Promise.all(Object.entries(deps.state ?? {}).map(async ([k, f]) => [k, await f()])),
      ),
    }),
  })

  return {
    app,
    admin,
    pipeline,
    config,
    ready,
    drain: () => {
      pipeline.draining = true
    },
    eventLoopLagMs: () => guard.lagMs(),
    whenIdle: () => pipeline.whenIdle(),
  }
}
