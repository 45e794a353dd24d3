import { fillerText } from './filler.js'
import type { FinishReason } from './sim-request.js'

/**
 * Response text, byte for byte in vLLM's shapes (exclude_unset for stream chunks), built from
 * per-request constant strings so a streamed token costs a few concatenations.
 */
export interface ResponseFrames {
  /** One SSE event with token `tok`; `first` adds the role (chat), `finish` sets finish_reason. */
  chunk(tok: string, first: boolean, finish: FinishReason | null): string
  /** The final usage event (`choices: []`). */
  usage(promptTokens: number, completionTokens: number): string
  /** The non-streamed response body. */
  body(completionTokens: number, finish: FinishReason, promptTokens: number): string
  /** What ends a stream after its last token; default: the usage event if asked, then [DONE]. */
  streamEnd?(promptTokens: number, completionTokens: number, finish: FinishReason): string
}

export const SSE_DONE = 'data: [DONE]\n\n'

function usageJson(p: number, c: number): string {
  return `{"prompt_tokens":${p},"total_tokens":${p + c},"completion_tokens":${c},"prompt_tokens_details":null}`
}

export function chatFrames(id: string, created: number, model: string): ResponseFrames {
  const head = `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":[{"index":0,"delta":{`
  const mid = '"},"logprobs":null,"finish_reason":'
  return {
    chunk(tok, first, finish) {
      const delta = first ? `"role":"assistant","content":"${tok}` : `"content":"${tok}`
      const end = finish === null ? 'null}]}\n\n' : `"${finish}","stop_reason":null}]}\n\n`
      return head + delta + mid + end
    },
    usage(p, c) {
      return `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":[],"usage":{"prompt_tokens":${p},"total_tokens":${p + c},"completion_tokens":${c}}}\n\n`
    },
    body(c, finish, p) {
      const message = `{"role":"assistant","content":${JSON.stringify(fillerText(c))},"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning_content":null}`
      return `{"id":"${id}","object":"chat.completion","created":${created},"model":${JSON.stringify(model)},"choices":[{"index":0,"message":${message},"logprobs":null,"finish_reason":"${finish}","stop_reason":null}],"service_tier":null,"system_fingerprint":null,"usage":${usageJson(p, c)},"prompt_logprobs":null,"kv_transfer_params":null}`
    },
  }
}

export function completionFrames(id: string, created: number, model: string): ResponseFrames {
  const head = `data: {"id":"${id}","object":"text_completion","created":${created},"model":${JSON.stringify(model)},"choices":[{"index":0,"text":"`
  return {
    chunk(tok, _first, finish) {
      const fr = finish === null ? 'null' : `"${finish}"`
      return `${head}${tok}","logprobs":null,"finish_reason":${fr},"stop_reason":null}]}\n\n`
    },
    usage(p, c) {
      return `data: {"id":"${id}","object":"text_completion","created":${created},"model":${JSON.stringify(model)},"choices":[],"usage":{"prompt_tokens":${p},"total_tokens":${p + c},"completion_tokens":${c}}}\n\n`
    },
    body(c, finish, p) {
      return `{"id":"${id}","object":"text_completion","created":${created},"model":${JSON.stringify(model)},"choices":[{"index":0,"text":${JSON.stringify(fillerText(c))},"logprobs":null,"finish_reason":"${finish}","stop_reason":null,"prompt_logprobs":null}],"service_tier":null,"system_fingerprint":null,"usage":${usageJson(p, c)},"kv_transfer_params":null}`
    },
  }
}

/**
 * The Responses API's shapes: `response.created`, then one `response.output_text.delta`
 * event per token, then `response.completed` (or `response.incomplete` at the output
 * limit) carrying the response with its usage; no [DONE]. Not streamed: the response.
 */
export function responsesFrames(id: string, created: number, model: string): ResponseFrames {
  const msg = `msg_${id}`
  const response = (status: string, text: string, finish: FinishReason | null, p: number, c: number) => {
    const incomplete = finish === 'length' ? '{"reason":"max_output_tokens"}' : 'null'
    const output = `[{"type":"message","id":"${msg}","status":"${status === 'in_progress' ? 'in_progress' : 'completed'}","role":"assistant","content":[{"type":"output_text","text":${JSON.stringify(text)},"annotations":[]}]}]`
    const usage = `{"input_tokens":${p},"output_tokens":${c},"total_tokens":${p + c},"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}`
    return `{"id":"resp_${id}","object":"response","created_at":${created},"model":${JSON.stringify(model)},"status":"${status}","incomplete_details":${incomplete},"output":${status === 'in_progress' ? '[]' : output},"usage":${status === 'in_progress' ? 'null' : usage}}`
  }
  const event = (type: string, data: string) => `event: ${type}\ndata: {"type":"${type}",${data}}\n\n`
  const ended = (finish: FinishReason) => (finish === 'length' ? 'incomplete' : 'completed')
  return {
    chunk(tok, first) {
      const delta = event(
        'response.output_text.delta',
        `"item_id":"${msg}","output_index":0,"content_index":0,"delta":"${tok}"`,
      )
      return first
        ? event('response.created', `"response":${response('in_progress', '', null, 0, 0)}`) + delta
        : delta
    },
    usage() {
      return ''
    },
    body(c, finish, p) {
      return response(ended(finish), fillerText(c), finish, p, c)
    },
    streamEnd(p, c, finish) {
      const status = ended(finish)
      return event(`response.${status}`, `"response":${response(status, fillerText(c), finish, p, c)}`)
    },
  }
}
