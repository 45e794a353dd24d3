import type { DegradeAction } from './types.js'

/**
 * Caps max_tokens (and max_completion_tokens, or the Responses API's max_output_tokens):
 * less KV to reserve, shorter occupancy.
 */
export const capMaxTokens: DegradeAction<{ action: 'cap_max_tokens'; max_tokens: number }> = {
  name: 'cap_max_tokens',
  apply(req, step) {
    if (req.expectedOutput <= step.max_tokens) return false
    req.expectedOutput = step.max_tokens
    if (req.api === 'responses') {
      req.body.max_output_tokens = step.max_tokens
      return true
    }
    if ('max_completion_tokens' in req.body) req.body.max_completion_tokens = step.max_tokens
    if ('max_tokens' in req.body || !('max_completion_tokens' in req.body))
      req.body.max_tokens = step.max_tokens
    return true
  },
}
