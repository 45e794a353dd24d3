import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { parseJson, readBody, sendJson } from './http-util.js'
import { chatFrames, completionFrames, responsesFrames } from './openai-chunks.js'
import {
  type CompletionSpec,
  parseChatRequest,
  parseCompletionRequest,
  parseResponsesRequest,
} from './openai-parse.js'
import { planOutput } from './output-length.js'
import { blockHashes } from './prefix-hash.js'
import type { Replica } from './replica.js'
import { BufferedSink, StreamingSink } from './response-sinks.js'
import { contextLengthMessage, errorBody, maxTokensTooLargeMessage } from './sim-errors.js'
import { SimRequest } from './sim-request.js'

const PARSERS = {
  chat: parseChatRequest,
  completion: parseCompletionRequest,
  responses: parseResponsesRequest,
} as const

/** POST /v1/chat/completions, /v1/completions and /v1/responses: faults, validation, then into the engine. */
export async function handleCompletion(
  r: Replica,
  kind: CompletionSpec['kind'],
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const text = await readBody(req)
  if (text === null || r.crashed) return
  const admission = r.faults.admit()
  switch (admission.kind) {
    case 'not-ready':
      return sendJson(res, 503, errorBody(503, 'The model is still loading; the server is not ready yet.'))
    case 'crash':
      return r.crash()
    case 'hang':
      return
    case 'error':
      return sendJson(
        res,
        admission.status,
        errorBody(admission.status, 'Simulated engine failure (fault injection).'),
      )
    case 'serve':
      break
  }
  const json = parseJson(text)
  if (!json.ok) return sendJson(res, 400, errorBody(400, 'The request body is not valid JSON.'))
  const parsed = PARSERS[kind](json.value)
  if (!parsed.ok) return sendJson(res, 400, errorBody(400, parsed.message, parsed.param))
  const spec = parsed.spec
  if (spec.model !== undefined && spec.model !== r.modelName) {
    return sendJson(res, 404, errorBody(404, `The model \`${spec.model}\` does not exist.`, 'model'))
  }
  const maxLen = r.engine.profile.engine.maxModelLen
  if (spec.promptTokens >= maxLen) {
    return sendJson(res, 400, errorBody(400, contextLengthMessage(maxLen, spec.promptTokens)))
  }
  if (spec.maxTokens !== undefined && spec.promptTokens + spec.maxTokens > maxLen) {
    return sendJson(
      res,
      400,
      errorBody(400, maxTokensTooLargeMessage(spec.maxTokens, maxLen, spec.promptTokens)),
    )
  }
  admit(r, spec, res)
}

function admit(r: Replica, spec: CompletionSpec, res: ServerResponse): void {
  const pe = r.engine.profile.engine
  const cap = spec.maxTokens ?? pe.maxModelLen - spec.promptTokens
  const plan = planOutput(cap, spec.ignoreEos, r.engine.profile.output, r.outputRng)
  const hashes = pe.enablePrefixCaching
    ? blockHashes(spec.prefixSource, pe.blockSize, Math.floor(spec.promptTokens / pe.blockSize))
    : []
  const hex = randomUUID().replaceAll('-', '')
  const created = Math.floor(Date.now() / 1000)
  const frames =
    spec.kind === 'chat'
      ? chatFrames(`chatcmpl-${hex}`, created, r.modelName)
      : spec.kind === 'responses'
        ? responsesFrames(hex, created, r.modelName)
        : completionFrames(`cmpl-${hex}`, created, r.modelName)
  let done = false
  const onDone = (): void => {
    done = true
  }
  const sink = spec.stream
    ? new StreamingSink(res, frames, spec.includeUsage, onDone)
    : new BufferedSink(res, frames, onDone)
  const sim = new SimRequest({
    id: hex,
    promptTokens: spec.promptTokens,
    targetOutput: plan.tokens,
    finishReason: plan.finishReason,
    blockHashes: hashes,
    sink,
    arrival: r.clock.now(),
  })
  res.on('close', () => {
    if (!done) r.engine.abort(sim)
  })
  if (spec.stream) {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' })
    res.flushHeaders()
  }
  r.engine.submit(sim)
  r.loop.kick()
}
