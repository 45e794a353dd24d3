/**
 * What the admission stages need from an OpenAI-style JSON body, read once at the edge.
 * The body stays the parsed object so later stages can rewrite it (cap max_tokens,
 * swap the model, ask for usage) before it is serialised for the upstream.
 */

import { isRecord } from '../is-record.js'
import { isObjectItem, isText } from './lazy-text.js'

export type JsonBody = Record<string, unknown>

export interface RequestFields {
  model: string | undefined
  stream: boolean
  /** max_completion_tokens, else max_tokens, else max_output_tokens (Responses API), when a positive integer. */
  maxTokens: number | undefined
  /** The client itself asked for `stream_options.include_usage`. */
  clientWantsUsage: boolean
  /** `service_tier` as sent (`flex` means batch). */
  serviceTier: string | undefined
}

function positiveInt(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined
}

export function readFields(body: JsonBody): RequestFields {
  const so = body.stream_options
  const clientWantsUsage = isRecord(so) && so.include_usage === true
  return {
    model: typeof body.model === 'string' ? body.model : undefined,
    stream: body.stream === true,
    maxTokens:
      positiveInt(body.max_completion_tokens) ??
      positiveInt(body.max_tokens) ??
      positiveInt(body.max_output_tokens),
    clientWantsUsage,
    serviceTier: typeof body.service_tier === 'string' ? body.service_tier : undefined,
  }
}

/**
 * Asks the upstream for a usage chunk at the end of a stream, so the gateway can account
 * tokens exactly; the relay removes that chunk again when the client did not ask for it.
 * A new `stream_options` object, not the old one changed (forward sees the new value).
 */
export function requestStreamUsage(body: JsonBody): void {
  const so = body.stream_options
  body.stream_options = isRecord(so) ? { ...so, include_usage: true } : { include_usage: true }
}

export interface PromptSize {
  /** Characters of prompt text (message contents, `prompt`, or `input`, and `instructions`). */
  chars: number
  /** Chat messages, or Responses API input items (each adds template tokens); 0 for completions. */
  messages: number
}

/**
 * The size of the prompt: a cheap stand-in for tokens at the edge; admission turns it
 * into tokens with a per-model ratio.
 */
export function promptSize(body: JsonBody): PromptSize {
  const messages = body.messages
  const instructions = isText(body.instructions) ? body.instructions.length : 0
  if (Array.isArray(messages)) {
    let n = 0
    for (const m of messages) {
      if (isRecord(m)) n += contentChars(m.content)
    }
    return { chars: n, messages: messages.length }
  }
  const input = body.input
  if (Array.isArray(input) && input.some(isObjectItem)) {
    // Responses API: input items ({role, content} messages), and instructions as a system message
    let n = instructions
    for (const item of input) {
      if (isObjectItem(item)) n += contentChars(item.content)
      else if (isText(item)) n += item.length
    }
    return { chars: n, messages: input.length + (isText(body.instructions) ? 1 : 0) }
  }
  return { chars: promptChars(body) + instructions, messages: 0 }
}

function promptChars(body: JsonBody): number {
  let n = 0
  const prompt = body.prompt
  if (isText(prompt)) return prompt.length
  if (Array.isArray(prompt)) {
    for (const p of prompt) {
      if (isText(p)) n += p.length
      else if (typeof p === 'number')
        n += 4 // a token id: about four characters
      else if (Array.isArray(p)) n += 4 * p.length
    }
  }
  const input = body.input
  if (isText(input)) n += input.length
  else if (Array.isArray(input)) for (const p of input) if (isText(p)) n += p.length
  return n
}

function contentChars(content: unknown): number {
  if (isText(content)) return content.length
  if (!Array.isArray(content)) return 0
  let n = 0
  for (const part of content) {
    if (isRecord(part) && isText(part.text)) n += part.text.length
  }
  return n
}
