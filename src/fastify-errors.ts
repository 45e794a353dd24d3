/**
 * Fastify's own failures (a body it cannot parse, too large, of an unsupported type), each
 * mapped to the gateway's error, so both listeners answer them OpenAI-shaped. Anything
 * else is not the client's doing: undefined, and the caller answers GW_ERR_INTERNAL.
 */
import type { FastifyError, FastifyRequest } from 'fastify'
import { GatewayError } from './errors.js'

export function fastifyError(
  err: FastifyError,
  request: FastifyRequest,
  bodyLimit: number,
): GatewayError | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new GatewayError('GW_ERR_INVALID_JSON', {}, { cause: err })
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('GW_ERR_EMPTY_BODY', {}, { cause: err })
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('GW_ERR_BODY_TOO_LARGE', { limit: bodyLimit }, { cause: err })
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError(
        'GW_ERR_UNSUPPORTED_MEDIA_TYPE',
        { contentType: String(request.headers['content-type'] ?? '(none)').slice(0, 100) },
        { cause: err },
      )
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('GW_ERR_INVALID_BODY', { reason: 'bad content-length' }, { cause: err })
    default:
      return err instanceof SyntaxError
        ? new GatewayError('GW_ERR_INVALID_JSON', {}, { cause: err })
        : undefined
  }
}
