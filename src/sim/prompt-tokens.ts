/**
 * The simulator's prompt-token rule. No tokenizer runs: the count is a documented function of the
 * request text, cheap and exact, so tests and load generators can aim at exact counts.
 *
 *   chat:        ceil(C / 4) + 4 · M   C = characters (UTF-16 code units, JS string length) of all
 *                                      message contents, M = number of messages
 *   completions: ceil(C / 4)           C = characters of the prompt string; a prompt given as an
 *                                      array of token ids counts as its length
 *   minimum 1 (a BOS token).
 *
 * A content is a string, null, or an array of parts; only `{type:"text", text}` parts count
 * (images and other parts count 0 characters).
 */
export const CHARS_PER_TOKEN = 4
export const TOKENS_PER_MESSAGE = 4

export function tokensForChars(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN)
}

export function chatPromptTokens(totalContentChars: number, numMessages: number): number {
  return Math.max(1, tokensForChars(totalContentChars) + TOKENS_PER_MESSAGE * numMessages)
}

export function completionPromptTokens(prompt: string | readonly number[]): number {
  if (typeof prompt === 'string') return Math.max(1, tokensForChars(prompt.length))
  return Math.max(1, prompt.length)
}

/** Characters a text of exactly `tokens` completion-prompt tokens needs (for load generators). */
export function charsForTokens(tokens: number): number {
  return tokens * CHARS_PER_TOKEN
}
