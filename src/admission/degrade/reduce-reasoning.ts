import type { DegradeAction } from './types.js'

const ORDER = ['minimal', 'low', 'medium', 'high']

/** Lowers `reasoning_effort` (reasoning models think less, answer sooner). */
export const reduceReasoning: DegradeAction<{
  action: 'reduce_reasoning'
  effort: 'minimal' | 'low' | 'medium'
}> = {
  name: 'reduce_reasoning',
  apply(req, step) {
    const current = req.body.reasoning_effort
    const rank = typeof current === 'string' ? ORDER.indexOf(current) : ORDER.indexOf('medium')
    if (rank !== -1 && rank <= ORDER.indexOf(step.effort)) return false
    req.body.reasoning_effort = step.effort
    return true
  },
}
