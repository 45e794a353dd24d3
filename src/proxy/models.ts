/**
 * GET /v1/models: what the pools serve, in the OpenAI list shape. A pool that serves any
 * model (`*`) is asked for its own list, so quick `--upstream` use shows the real names.
 */
import type { FastifyReply } from 'fastify'
import type { Backends } from '../backends/types.js'

interface ModelEntry {
  id: string
  object: 'model'
  created: number
  owned_by: string
}

const CREATED = Math.floor(Date.now() / 1000)
const UPSTREAM_TIMEOUT_MS = 2_000

async function upstreamModels(backends: Backends): Promise<string[]> {
  const pool = backends.route(undefined)
  const endpoint = pool?.endpoints()[0]
  if (endpoint === undefined) return []
  try {
    const res = await endpoint.dispatcher.request({
      path: '/v1/models',
      method: 'GET',
      headersTimeout: UPSTREAM_TIMEOUT_MS,
      bodyTimeout: UPSTREAM_TIMEOUT_MS,
    })
    if (res.statusCode !== 200) {
      await res.body.dump()
      return []
    }
    const body = (await res.body.json()) as { data?: { id?: unknown }[] }
    return (body.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string')
  } catch {
    return []
  }
}

export async function listModels(backends: Backends, reply: FastifyReply): Promise<void> {
  const ids = new Set(backends.modelIds().filter((id) => id !== '*'))
  for (const id of await upstreamModels(backends)) ids.add(id)
  const data: ModelEntry[] = [...ids].map((id) => ({
    id,
    object: 'model',
    created: CREATED,
    owned_by: 'slo-gateway',
  }))
  await reply.send({ object: 'list', data })
}
