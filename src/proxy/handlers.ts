/**
 * The public routes' handlers: wiring from the HTTP app to the request's path. Each
 * request is begun as a ticket and run through the stages (src/stages.ts).
 */
import { randomUUID } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Pipeline } from './pipeline.js'

export interface RouteHandlers {
  /** POST routes with an OpenAI JSON body (chat, completions, embeddings). */
  readonly json: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
  /** Any other /v1/* request: forwarded as it came, body streamed. */
  readonly raw: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
}

export function routeHandlers(pipeline: Pipeline): RouteHandlers {
  return {
    json: async (request, reply) => pipeline.run(pipeline.begin(request, reply, 'json')),
    raw: async (request, reply) => pipeline.run(pipeline.begin(request, reply, 'raw')),
  }
}

const REQUEST_ID = /^[\w.:-]+$/

/** Request ids: the client's x-request-id when sane, else a UUID. */
export function requestId(header: string | string[] | undefined): string {
  if (typeof header === 'string' && header.length > 0 && header.length <= 128 && REQUEST_ID.test(header)) {
    return header
  }
  return randomUUID()
}
