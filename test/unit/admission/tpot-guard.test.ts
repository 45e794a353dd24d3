import { describe, expect, it } from 'vitest'
import { TpotGuard } from '../../../src/admission/tpot-guard.js'
import { ManualClock } from '../../../src/clock.js'

const classes = [
  { name: 'interactive', priority: 0, tpotMs: 50 },
  { name: 'batch', priority: 1, tpotMs: undefined },
]

describe('TpotGuard', () => {
  it('holds batch back while interactive decodes near its TPOT objective, and lets it go again', () => {
    const clock = new ManualClock()
    const g = new TpotGuard(classes, 0.1, 10_000, clock)
    expect(g.allows('batch')).toBe(true) // nothing known yet
    g.observe('interactive', 60)
    expect(g.allows('batch')).toBe(false)
    expect(g.allows('interactive')).toBe(false) // its own objective holds it back too
    for (let i = 0; i < 20; i++) g.observe('interactive', 30)
    expect(g.allows('batch')).toBe(true)
  })

  it('forgets a stale measurement: no interactive traffic, no hold', () => {
    const clock = new ManualClock()
    const g = new TpotGuard(classes, 0.1, 10_000, clock)
    g.observe('interactive', 80)
    clock.advance(9_999)
    expect(g.allows('batch')).toBe(false)
    clock.advance(1)
    expect(g.allows('batch')).toBe(true)
  })
})
