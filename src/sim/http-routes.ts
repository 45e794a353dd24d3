import type { IncomingMessage, ServerResponse } from 'node:http'
import { handleCompletion } from './completion-handler.js'
import { parseFaultSpec } from './fault-spec.js'
import { parseJson, readBody, sendJson } from './http-util.js'
import type { Replica } from './replica.js'
import { errorBody } from './sim-errors.js'

const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
const noop = (): void => {}

/** The replica's HTTP surface: OpenAI API, health, metrics, and the fault admin API. */
export function createRequestHandler(r: Replica): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    res.on('error', noop)
    req.on('error', noop)
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const path = q === -1 ? url : url.slice(0, q)
    const method = req.method ?? 'GET'
    const route = ROUTES[path]
    if (route === undefined) return sendJson(res, 404, '{"detail":"Not Found"}')
    const handler = route[method]
    if (handler === undefined) return sendJson(res, 405, '{"detail":"Method Not Allowed"}')
    handler(r, req, res)
  }
}

type Handler = (r: Replica, req: IncomingMessage, res: ServerResponse) => void

const metrics: Handler = (r, _req, res) => {
  const text = r.metricsText()
  if (text === null)
    return sendJson(res, 500, errorBody(500, 'Simulated /metrics failure (fault injection).'))
  res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE, 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

const ROUTES: Readonly<Record<string, Readonly<Record<string, Handler>>>> = {
  '/health': {
    GET: (r, _req, res) => {
      res.writeHead(r.faults.ready ? 200 : 503, { 'content-length': 0 })
      res.end()
    },
  },
  '/version': { GET: (_r, _req, res) => sendJson(res, 200, '{"version":"slo-gateway-sim"}') },
  '/v1/models': {
    GET: (r, _req, res) => {
      if (!r.faults.ready)
        return sendJson(res, 503, errorBody(503, 'The model is still loading; the server is not ready yet.'))
      sendJson(res, 200, r.modelsBody())
    },
  },
  '/props': {
    GET: (r, _req, res) => {
      const body = r.propsBody()
      sendJson(res, body === null ? 404 : 200, body ?? '{"detail":"Not Found"}')
    },
  },
  '/metrics': { GET: metrics },
  '/prometheus/metrics': { GET: metrics },
  '/v1/chat/completions': { POST: (r, req, res) => void handleCompletion(r, 'chat', req, res) },
  '/v1/completions': { POST: (r, req, res) => void handleCompletion(r, 'completion', req, res) },
  '/v1/responses': { POST: (r, req, res) => void handleCompletion(r, 'responses', req, res) },
  '/admin/faults': {
    GET: (r, _req, res) => sendJson(res, 200, JSON.stringify(r.faults.describe())),
    DELETE: (r, _req, res) => {
      r.applyFaults({})
      sendJson(res, 200, JSON.stringify(r.faults.describe()))
    },
    POST: (r, req, res) => {
      void readBody(req, 1024 * 1024).then((text) => {
        if (text === null) return
        const json = parseJson(text === '' ? '{}' : text)
        if (!json.ok) return sendJson(res, 400, errorBody(400, 'The request body is not valid JSON.'))
        const parsed = parseFaultSpec(json.value)
        if (!parsed.ok) return sendJson(res, 400, errorBody(400, `Invalid fault spec: ${parsed.message}`))
        sendJson(res, 200, JSON.stringify({ ...r.faults.describe(), faults: parsed.spec }))
        // a crash waits until this answer is on the wire; everything else applies at once
        if (parsed.spec.crash === true) res.once('finish', () => r.applyFaults(parsed.spec))
        else r.applyFaults(parsed.spec)
      })
    },
  },
}
