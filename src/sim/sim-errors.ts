/**
 * Error bodies as vLLM's OpenAI server sends them (vllm/entrypoints/openai/protocol.py ErrorResponse):
 * `{"error":{"message","type","param","code"}}` with `code` the HTTP status. (vLLM before ~0.10
 * sent the same fields flat with "object":"error".)
 */
const TYPES: Readonly<Record<number, string>> = {
  400: 'BadRequestError',
  404: 'NotFoundError',
  500: 'InternalServerError',
  503: 'ServiceUnavailableError',
}

export function errorBody(status: number, message: string, param: string | null = null): string {
  return JSON.stringify({
    error: { message, type: TYPES[status] ?? 'InternalServerError', param, code: status },
  })
}

export function contextLengthMessage(maxModelLen: number, promptTokens: number): string {
  return (
    `This model's maximum context length is ${maxModelLen} tokens. However, your request has ` +
    `${promptTokens} input tokens. Please reduce the length of the input messages.`
  )
}

export function maxTokensTooLargeMessage(
  maxTokens: number,
  maxModelLen: number,
  promptTokens: number,
): string {
  return (
    `'max_tokens' or 'max_completion_tokens' is too large: ${maxTokens}. This model's maximum context length is ` +
    `${maxModelLen} tokens and your request has ${promptTokens} input tokens ` +
    `(${maxTokens} > ${maxModelLen} - ${promptTokens}).`
  )
}
