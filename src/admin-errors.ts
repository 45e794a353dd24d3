/**
 * The admin listener answers its errors as the public one does, OpenAI-shaped
 * (`{"error": {"message", "type", "code", "param"}}`, a GW_ERR_* code): an unknown route is
 * 404 GW_ERR_ROUTE_NOT_FOUND, a body Fastify cannot parse its 4xx, and a route that fails
 * (a state source that throws) 500 GW_ERR_INTERNAL, logged, its message never sent.
 * Fastify's defaults (`{"statusCode", "error", "message"}`, the internal message echoed)
 * are not.
 */
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import { errorHeaders, GatewayError } from './errors.js'
import { fastifyError } from './fastify-errors.js'

function send(reply: FastifyReply, err: GatewayError): void {
  reply.code(err.status).headers(errorHeaders(err)).send(err.toJSON())
}

export function answerAdminErrors(
  admin: FastifyInstance,
  logger: FastifyBaseLogger,
  bodyLimit: number,
): void {
  admin.setNotFoundHandler((request, reply) => {
    send(
      reply,
      new GatewayError('GW_ERR_ROUTE_NOT_FOUND', {
        method: request.method,
        url: request.url.split('?')[0] ?? '',
      }),
    )
  })
  admin.setErrorHandler((err: FastifyError, request, reply) => {
    let gwErr = fastifyError(err, request, bodyLimit)
    if (gwErr === undefined) {
      logger.error({ err, reqId: request.id, url: request.url.split('?')[0] }, 'admin route failed')
      gwErr = new GatewayError('GW_ERR_INTERNAL', {}, { cause: err })
    }
    send(reply, gwErr)
  })
}
