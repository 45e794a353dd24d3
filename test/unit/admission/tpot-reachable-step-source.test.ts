/**
 * unreachableTpot: the one judgment of a TPOT objective no batch size holds, as admission
 * makes it (a learned step fact) and as doctor makes it (a profile's step for one sequence).
 */
import { describe, expect, it } from 'vitest'
import {
  type TpotObjective,
  unreachableTpot,
  unreachableTpotMessage,
} from '../../../src/admission/tpot-reachable.js'

const classes: Record<string, { readonly slo: TpotObjective['slo'] & Record<string, number> }> = {
  interactive: { slo: { ttft_ms: 500, tpot_ms: 20 } },
  chat: { slo: { tpot_ms: 60 } },
  batch: { slo: { e2e_ms: 60_000 } },
}

describe('unreachableTpot', () => {
  it('names each class whose objective is under one step, with the step and its source', () => {
    const u = unreachableTpot(classes, { value: 31.234, source: 'measured' as const })
    expect(u).toEqual([{ class: 'interactive', tpotMs: 20, leastTpotMs: 31.23, source: 'measured' }])
    expect(unreachableTpotMessage('gpu', u[0]!)).toContain('(20 ms) is below the least TPOT pool gpu')
  })

  it('is silent when the step is within every objective, or equal to it', () => {
    expect(unreachableTpot(classes, { value: 20, source: 'default_prior' as const })).toEqual([])
    expect(unreachableTpot(classes, { value: 6.5, source: 'config' as const })).toEqual([])
  })

  it("takes any source, such as doctor's step model of a profile", () => {
    const u = unreachableTpot(
      { chat: classes.chat! },
      { value: 75, source: 'profile llama-3.1-70b-h100-tp4' },
    )
    expect(u.map((x) => [x.class, x.source])).toEqual([['chat', 'profile llama-3.1-70b-h100-tp4']])
  })
})
