/**
 * Stage parse: what the request asks for, read once at the edge.
 *
 * On the OpenAI JSON routes: the body must be a JSON object; its model picks the pool
 * that serves it (404 when none does); the prompt's size gives its tokens (one estimate
 * for every path: characters per token, learned per model from the usage servers
 * report); max_tokens, else the configured default, gives its expected output. A streamed
 * generation asks the server for a usage chunk (removed again when the client did not ask
 * for it) so tokens are accounted exactly. Generation routes (chat, completions and the
 * Responses API) are admission-controlled; other JSON routes (embeddings) only get a lease.
 * The body's nesting and the fields the gateway reads are checked first (body-checks.ts).
 * Other /v1/* routes go, unread, to the first pool that serves every model.
 */
import { upstreamModel } from '../backends/index.js'
import { GatewayError } from '../errors.js'
import type { Stage, StageDeps } from '../gateway-request.js'
import { isRecord } from '../is-record.js'
import type { GenerationApi } from '../ticket.js'
import { checkBody } from './body-checks.js'
import { promptSize, readFields, requestStreamUsage } from './request-fields.js'

/** The routes admission governs, and their API. */
const GENERATION_ROUTES: readonly [string, GenerationApi][] = [
  ['/v1/chat/completions', 'chat'],
  ['/v1/completions', 'completions'],
  ['/v1/responses', 'responses'],
]

function apiOf(url: string): GenerationApi | undefined {
  const q = url.indexOf('?')
  const path = q < 0 ? url : url.slice(0, q)
  for (const [route, api] of GENERATION_ROUTES) if (path === route) return api
  return undefined
}

/** Longest `x-session-id` taken (a longer one is ignored: no session affinity). */
export const MAX_SESSION_ID = 256

export function parseStage(deps: StageDeps): Stage {
  const { backends, tokens, defaultMaxTokens } = deps
  return (r) => {
    const t = r.ticket
    if (r.kind === 'raw') {
      r.pool = backends.route(undefined) ?? backends.pools()[0]
      t.poolName = r.pool?.name
      return undefined
    }
    const body = r.received
    if (!isRecord(body) || Array.isArray(body)) {
      const reason = Array.isArray(body) ? 'got a JSON array' : `got ${body === null ? 'null' : typeof body}`
      return new GatewayError('GW_ERR_INVALID_BODY', { reason })
    }
    const bad = checkBody(body)
    if (bad !== undefined) return bad
    r.body = body
    if (r.raw !== undefined) r.original = { ...body }
    const fields = readFields(body)
    t.model = fields.model
    t.stream = fields.stream
    t.maxTokens = fields.maxTokens
    t.clientWantsUsage = fields.clientWantsUsage
    t.serviceTier = fields.serviceTier
    const pool = backends.route(fields.model)
    if (pool === undefined) {
      return new GatewayError('GW_ERR_MODEL_NOT_FOUND', { model: fields.model ?? '' }, { param: 'model' })
    }
    r.pool = pool
    t.poolName = pool.name
    // servers know their own model names, not the gateway's aliases
    const served = upstreamModel(pool.config, fields.model)
    if (served !== fields.model) {
      body.model = served
      t.servedModel = served
    }
    t.api = apiOf(r.url)
    t.generation = t.api !== undefined
    const size = promptSize(body)
    t.promptChars = size.chars
    t.promptMessages = size.messages
    t.promptTokens = tokens.estimate(t.model ?? '', size.chars, size.messages)
    t.expectedOutputTokens = t.maxTokens ?? defaultMaxTokens
    const length = Number(r.headers['content-length'])
    t.bodyBytes = Number.isFinite(length) ? length : size.chars
    // session affinity (routing.session_affinity): an opaque id, bounded so it cannot bloat the table
    const session = r.headers['x-session-id']
    if (typeof session === 'string' && session.length > 0 && session.length <= MAX_SESSION_ID)
      t.sessionId = session
    // (a Responses API stream always ends with its usage, in response.completed)
    if (t.generation && t.api !== 'responses' && t.stream && !t.clientWantsUsage) {
      requestStreamUsage(body)
      t.usageAdded = true
    }
    return undefined
  }
}
