/**
 * buildGateway(config, deps): the public and admin Fastify instances, wired to the
 * stages. It never listens (server.ts does), so tests drive it with `inject` or on port 0.
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
import type { Admission } from './admission/admission.js'
import type { Backends } from './backends/types.js'
import type { Clock } from './clock.js'
import type { GatewayConfig } from './config/schema.js'
import { GatewayError } from './errors.js'
import type { RequestRecorder } from './proxy/account.js'
import { ProxyHandlers, requestId } from './proxy/handlers.js'
import { listModels } from './proxy/models.js'

export interface GatewayDeps {
  readonly clock: Clock
  readonly logger: Logger
  readonly registry: Registry
  readonly backends: Backends
  readonly recorder: RequestRecorder
  /** Admission control; undefined makes a plain proxy. */
  readonly admission?: Admission | undefined
  /** Extra sections for GET /admin/state, each read when asked. */
  readonly state?: Record<string, () => unknown>
}

export interface Gateway {
  /** Public listener: the OpenAI-compatible API. */
  readonly app: FastifyInstance
  /** Admin listener: /metrics, /healthz, /readyz, /admin/state. */
  readonly admin: FastifyInstance
  readonly handlers: ProxyHandlers
  readonly config: GatewayConfig
  /** Ready to serve: not draining and a backend has fresh load data (/readyz). */
  ready(): boolean
  /** Start refusing new requests (503) and fail /readyz; in-flight requests go on. */
  drain(): void
  /** Resolves when no request is in flight. */
  whenIdle(): Promise<void>
}

/** Fastify's body-parsing failures, each mapped to the gateway's own error. */
function parseError(err: FastifyError, limit: number): GatewayError | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new GatewayError('GW_ERR_INVALID_JSON', {}, { cause: err })
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('GW_ERR_EMPTY_BODY', {}, { cause: err })
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('GW_ERR_BODY_TOO_LARGE', { limit }, { cause: err })
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? new GatewayError('GW_ERR_UNSUPPORTED_MEDIA_TYPE', { contentType: '' }, { cause: err })
        : new GatewayError('GW_ERR_INVALID_BODY', { reason: 'bad content-length' }, { cause: err })
    default:
      return err instanceof SyntaxError
        ? new GatewayError('GW_ERR_INVALID_JSON', {}, { cause: err })
        : undefined
  }
}

export function buildGateway(config: GatewayConfig, deps: GatewayDeps): Gateway {
  const limit = config.server.body_limit_bytes
  const app = Fastify({
    loggerInstance: deps.logger,
    // one log line per request comes from the accounting stage instead
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: limit,
    genReqId: (req) => requestId(req.headers['x-request-id']),
    return503OnClosing: false,
    forceCloseConnections: 'idle',
  })
  const handlers = new ProxyHandlers({
    backends: deps.backends,
    admission: deps.admission,
    recorder: deps.recorder,
    clock: deps.clock,
    logger: deps.logger,
  })

  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const t = handlers.newTicket(request)
    let gwErr = parseError(err, limit)
    if (gwErr?.code === 'GW_ERR_UNSUPPORTED_MEDIA_TYPE') {
      gwErr = new GatewayError('GW_ERR_UNSUPPORTED_MEDIA_TYPE', {
        contentType: String(request.headers['content-type'] ?? '(none)').slice(0, 100),
      })
    }
    if (gwErr === undefined) {
      deps.logger.error({ err, reqId: request.id }, 'unhandled error')
      gwErr = new GatewayError('GW_ERR_INTERNAL', {}, { cause: err })
    }
    handlers.refuse(t, reply, gwErr)
  })
  app.setNotFoundHandler((request, reply) => {
    const t = handlers.newTicket(request)
    handlers.refuse(
      t,
      reply,
      new GatewayError('GW_ERR_ROUTE_NOT_FOUND', {
        method: request.method,
        url: request.url.split('?')[0] ?? '',
      }),
    )
  })

  // The OpenAI routes take JSON only: anything else is a 415, not a string body.
  app.removeContentTypeParser('text/plain')
  app.post('/v1/chat/completions', handlers.json)
  app.post('/v1/completions', handlers.json)
  app.post('/v1/embeddings', handlers.json)
  app.get('/v1/models', (_request, reply) => listModels(deps.backends, reply))
  // Everything else under /v1 is forwarded as it came, body streamed unparsed.
  app.register(async (raw) => {
    raw.removeAllContentTypeParsers()
    raw.addContentTypeParser('*', (_req, payload, done) => done(null, payload))
    raw.all('/v1/*', handlers.raw)
  })

  const ready = () => !handlers.draining && deps.backends.ready()
  const admin = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
  })
  registerAdminRoutes(admin, {
    registry: deps.registry,
    ready,
    draining: () => handlers.draining,
    state: () => ({
      draining: handlers.draining,
      inflight: handlers.inFlight,
      backends: deps.backends.state(),
      admission: deps.admission?.state(),
      ...Object.fromEntries(Object.entries(deps.state ?? {}).map(([k, f]) => [k, f()])),
    }),
  })

  return {
    app,
    admin,
    handlers,
    config,
    ready,
    drain: () => {
      handlers.draining = true
    },
    whenIdle: () => handlers.whenIdle(),
  }
}
