/**
 * The degrade ladder's walk: a class's steps, in order, while the request is predicted to
 * miss something (forecast.ts), each step tried only where it can help, and everything
 * predicted again after each step that changed the request.
 *
 * What each action can help:
 * - `cap_max_tokens`, `single_choice`: less KV to reserve and fewer steps to stream, so
 *   KV headroom, a TPOT lost to preemption, and E2E; never TTFT (the prompt is the same).
 * - `fallback_model`: another pool, so anything.
 * - `reduce_reasoning`: fewer tokens before the answer: TTFT as the client sees it, and E2E.
 * - `demote_to_batch`: the request is judged by batch's objectives instead: a TTFT miss only
 *   (and the rest of the ladder is the interactive class's: the walk ends there).
 */
import type { DegradeStep } from '../config/schema.js'
import type { Threat } from './forecast.js'

export const HELPS: Readonly<Record<DegradeStep['action'], ReadonlySet<Threat>>> = {
  cap_max_tokens: new Set(['kv', 'tpot', 'e2e']),
  single_choice: new Set(['kv', 'tpot', 'e2e']),
  fallback_model: new Set(['ttft', 'kv', 'tpot', 'e2e']),
  reduce_reasoning: new Set(['ttft', 'e2e']),
  demote_to_batch: new Set(['ttft']),
}

/** True when `action` can help with one of `threats`. */
export function helps(action: DegradeStep['action'], threats: ReadonlySet<Threat>): boolean {
  const can = HELPS[action]
  for (const t of threats) if (can.has(t)) return true
  return false
}

/**
 * Walks `steps`: before each, `threats()` says what is predicted missed now (the caller
 * predicts again after every step it applied); a step that cannot help is skipped; `apply`
 * returns 'applied' (it changed the request), 'skipped' (it does not apply to this request)
 * or 'done' (the walk ends: the request changed class). Returns the actions applied, in order.
 */
export function walkLadder(
  steps: readonly DegradeStep[],
  threats: () => ReadonlySet<Threat>,
  apply: (step: DegradeStep) => 'applied' | 'skipped' | 'done',
): DegradeStep['action'][] {
  const applied: DegradeStep['action'][] = []
  for (const step of steps) {
    const now = threats()
    if (now.size === 0) break
    if (!helps(step.action, now)) continue
    const r = apply(step)
    if (r === 'skipped') continue
    applied.push(step.action)
    if (r === 'done') break
  }
  return applied
}
