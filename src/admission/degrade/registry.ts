/**
 * Degrade actions by name. Adding one: a file beside this one and a line here (and the
 * config schema's `degrade` union). `demote_to_batch` is not here: it changes the request's
 * class, which admission decides (admission.ts).
 */
import type { BodyDegradeStep } from '../../config/schema.js'
import { capMaxTokens } from './cap-max-tokens.js'
import { fallbackModel } from './fallback-model.js'
import { reduceReasoning } from './reduce-reasoning.js'
import { singleChoice } from './single-choice.js'
import type { DegradableRequest, DegradeAction, DegradeContext } from './types.js'

const ACTIONS: { [K in BodyDegradeStep['action']]: DegradeAction<Extract<BodyDegradeStep, { action: K }>> } =
  {
    cap_max_tokens: capMaxTokens,
    fallback_model: fallbackModel,
    reduce_reasoning: reduceReasoning,
    single_choice: singleChoice,
  }

/** Applies one configured step; true when it changed the request. */
export function applyStep(req: DegradableRequest, step: BodyDegradeStep, ctx: DegradeContext): boolean {
  const action = ACTIONS[step.action] as DegradeAction
  return action.apply(req, step, ctx)
}

export const degradeActionNames = [...Object.keys(ACTIONS), 'demote_to_batch']
