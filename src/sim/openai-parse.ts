import { isRecord } from '../is-record.js'
import { chatPromptTokens, completionPromptTokens } from './prompt-tokens.js'

/** The parts of an OpenAI completion request the simulator acts on, parsed from untrusted JSON. */
export interface CompletionSpec {
  readonly kind: 'chat' | 'completion' | 'responses'
  readonly model: string | undefined
  readonly promptTokens: number
  /** Canonical prompt for prefix-cache hashing: text, or the token ids given. */
  readonly prefixSource: string | readonly number[]
  readonly maxTokens: number | undefined
  readonly ignoreEos: boolean
  readonly stream: boolean
  readonly includeUsage: boolean
}

export type SpecResult =
  | { readonly ok: true; readonly spec: CompletionSpec }
  | { readonly ok: false; readonly message: string; readonly param: string | null }

type Obj = Record<string, unknown>

const fail = (message: string, param: string | null = null): SpecResult => ({ ok: false, message, param })

interface Common {
  readonly model: string | undefined
  readonly maxTokens: number | undefined
  readonly ignoreEos: boolean
  readonly stream: boolean
  readonly includeUsage: boolean
}

function parseCommon(b: Obj, maxTokensKeys: readonly string[]): Common | SpecResult {
  if (b.model !== undefined && b.model !== null && typeof b.model !== 'string')
    return fail('model must be a string', 'model')
  let maxTokens: number | undefined
  for (const key of maxTokensKeys) {
    const v = b[key]
    if (v === undefined || v === null) continue
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
      return fail(`${key} must be an integer >= 1`, key)
    maxTokens = v
    break
  }
  if (b.n !== undefined && b.n !== null && b.n !== 1) return fail('the simulator supports n = 1 only', 'n')
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean') {
    return fail('stream must be a boolean', 'stream')
  }
  if (b.ignore_eos !== undefined && b.ignore_eos !== null && typeof b.ignore_eos !== 'boolean') {
    return fail('ignore_eos must be a boolean', 'ignore_eos')
  }
  const stream = b.stream === true
  let includeUsage = false
  const so = b.stream_options
  if (so !== undefined && so !== null) {
    if (!stream) return fail('Stream options can only be defined when `stream=True`.', 'stream_options')
    if (!isRecord(so)) return fail('stream_options must be an object', 'stream_options')
    includeUsage = so.include_usage === true
  }
  const model = typeof b.model === 'string' ? b.model : undefined
  return { model, maxTokens, ignoreEos: b.ignore_eos === true, stream, includeUsage }
}

/** POST /v1/chat/completions */
export function parseChatRequest(body: unknown): SpecResult {
  if (!isRecord(body)) return fail('request body must be a JSON object')
  const common = parseCommon(body, ['max_completion_tokens', 'max_tokens'])
  if ('ok' in common) return common
  const messages = body.messages
  if (!Array.isArray(messages) || messages.length === 0)
    return fail('messages must be a non-empty array', 'messages')
  let chars = 0
  let text = ''
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i]
    if (!isRecord(m) || typeof m.role !== 'string')
      return fail(`messages[${i}] must be an object with a role`, 'messages')
    const content = contentText(m.content)
    if (content === null)
      return fail(`messages[${i}].content must be a string, null or an array of parts`, 'messages')
    chars += content.length
    text += `\u0001${m.role}\u0002${content}`
  }
  return {
    ok: true,
    spec: {
      kind: 'chat',
      ...common,
      promptTokens: chatPromptTokens(chars, messages.length),
      prefixSource: text,
    },
  }
}

/** Text of one Responses API content: a string, or parts with `text` (input_text, output_text). */
function responsesContent(content: unknown): string | null {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return null
  let text = ''
  for (const part of content) if (isRecord(part) && typeof part.text === 'string') text += part.text
  return text
}

/**
 * POST /v1/responses (the Responses API, as vLLM serves it): `input` is a string (one user
 * message) or an array of messages; `instructions` is a system message; the output limit
 * is `max_output_tokens`. Prompt tokens follow the chat rule.
 */
export function parseResponsesRequest(body: unknown): SpecResult {
  if (!isRecord(body)) return fail('request body must be a JSON object')
  const common = parseCommon(body, ['max_output_tokens'])
  if ('ok' in common) return common
  const messages: [string, string][] = []
  if (typeof body.instructions === 'string') messages.push(['system', body.instructions])
  const input = body.input
  if (typeof input === 'string') messages.push(['user', input])
  else if (Array.isArray(input) && input.length > 0) {
    for (let i = 0; i < input.length; i++) {
      const item: unknown = input[i]
      const content = isRecord(item) ? responsesContent(item.content) : null
      if (!isRecord(item) || typeof item.role !== 'string' || content === null)
        return fail(`input[${i}] must be a message with a role and a content`, 'input')
      messages.push([item.role, content])
    }
  } else return fail('input must be a string or a non-empty array of messages', 'input')
  let chars = 0
  let text = ''
  for (const [role, content] of messages) {
    chars += content.length
    text += `\u0001${role}\u0002${content}`
  }
  return {
    ok: true,
    spec: {
      kind: 'responses',
      ...common,
      includeUsage: true,
      promptTokens: chatPromptTokens(chars, messages.length),
      prefixSource: text,
    },
  }
}

/** POST /v1/completions */
export function parseCompletionRequest(body: unknown): SpecResult {
  if (!isRecord(body)) return fail('request body must be a JSON object')
  const common = parseCommon(body, ['max_tokens'])
  if ('ok' in common) return common
  let prompt: unknown = body.prompt
  if (
    Array.isArray(prompt) &&
    prompt.length === 1 &&
    (typeof prompt[0] === 'string' || Array.isArray(prompt[0]))
  ) {
    prompt = prompt[0]
  }
  if (typeof prompt === 'string') {
    return {
      ok: true,
      spec: {
        kind: 'completion',
        ...common,
        promptTokens: completionPromptTokens(prompt),
        prefixSource: prompt,
      },
    }
  }
  if (
    Array.isArray(prompt) &&
    prompt.length > 0 &&
    prompt.every((t) => typeof t === 'number' && Number.isInteger(t))
  ) {
    const ids = prompt as number[]
    return {
      ok: true,
      spec: { kind: 'completion', ...common, promptTokens: completionPromptTokens(ids), prefixSource: ids },
    }
  }
  return fail(
    'prompt must be a string, an array of token ids, or a one-element array of either (no batches)',
    'prompt',
  )
}

/** Text of a message content, '' for null/absent, null when malformed. */
function contentText(c: unknown): string | null {
  if (c === undefined || c === null) return ''
  if (typeof c === 'string') return c
  if (!Array.isArray(c)) return null
  let s = ''
  for (const part of c) {
    if (!isRecord(part) || typeof part.type !== 'string') return null
    if (part.type === 'text') {
      if (typeof part.text !== 'string') return null
      s += part.text
    }
  }
  return s
}
