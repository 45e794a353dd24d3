/**
 * The public routes' handlers: wiring from the HTTP app to the request's path. Each
 * request is begun as a ticket and run through the stages (src/stages.ts).
 */
import { randomUUID } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Pipeline } from './pipeline.js'

type RouteHandler = (request: FastifyRequest, reply: FastifyReply) => void

export interface RouteHandlers {
  /** The handler of a POST route with an OpenAI JSON body (chat, completions, embeddings). */
  readonly json: (route: string) => RouteHandler
  /** The handler of any other /v1/* request: forwarded as it came, body streamed. */
  readonly raw: (route: string) => RouteHandler
}

// Each handler knows its route (fastify's request.routeOptions builds an object per read).
// Not async: the reply is hijacked and answered by the pipeline, so fastify has no promise
// to wait for (an async handler costs a promise and its then per request).
export function routeHandlers(pipeline: Pipeline): RouteHandlers {
  const handler =
    (kind: 'json' | 'raw', route: string): RouteHandler =>
    (request, reply) =>
      pipeline.run(pipeline.begin(request, reply, kind, route))
  return { json: (route) => handler('json', route), raw: (route) => handler('raw', route) }
}

const REQUEST_ID = /^[\w.:-]+$/

/** Request ids: the client's x-request-id when sane, else a UUID. */
export function requestId(header: string | string[] | undefined): string {
  if (typeof header === 'string' && header.length > 0 && header.length <= 128 && REQUEST_ID.test(header)) {
    return header
  }
  return randomUUID()
}
