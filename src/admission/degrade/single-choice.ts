import type { DegradeAction } from './types.js'

/** `n` → 1: one sample instead of several (KV and batch slots for one sequence). */
export const singleChoice: DegradeAction<{ action: 'single_choice' }> = {
  name: 'single_choice',
  apply(req) {
    if (req.choices <= 1) return false
    req.choices = 1
    req.body.n = 1
    return true
  },
}
