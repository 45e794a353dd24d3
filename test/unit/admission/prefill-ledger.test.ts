import { describe, expect, it } from 'vitest'
import { PrefillLedger } from '../../../src/admission/prefill-ledger.js'

describe('PrefillLedger', () => {
  it('counts pending prompts per endpoint until each is uncounted, once', () => {
    const l = new PrefillLedger()
    const a = l.add('e0', 1000, 50)
    l.add('e0', 500, 80)
    expect([l.at('e0'), l.requestsAt('e0'), l.at('e1')]).toEqual([1500, 2, 0])
    a()
    a()
    expect([l.at('e0'), l.requestsAt('e0')]).toEqual([500, 1])
    expect(l.state()).toEqual({ e0: 500 })
  })

  it('says when the budget will have room, by the pending prompts expected first tokens', () => {
    const l = new PrefillLedger()
    expect(l.roomInMs('e0', 4000, 2048, 0)).toBe(0) // nothing pending: any request goes
    const first = l.add('e0', 1200, 100)
    l.add('e0', 600, 40)
    // 1800 pending: 200 more fit now
    expect(l.roomInMs('e0', 200, 2048, 10)).toBe(0)
    // 1000 more: after the 600 (due at 40): 1200 + 1000 > 2048, so after the 1200 (due at 100)
    expect(l.roomInMs('e0', 1000, 2048, 10)).toBe(90)
    // 400 more fit once the 600 is done
    expect(l.roomInMs('e0', 400, 2048, 10)).toBe(30)
    // larger than the budget: when the endpoint is empty
    expect(l.roomInMs('e0', 3000, 2048, 10)).toBe(90)
    // overdue: expected as late again (the 1200 due at 100, at 500 is 400 late: in 400)
    expect(l.roomInMs('e0', 1000, 2048, 500)).toBe(400)
    // the order is by the expected times as they are now: at 120 the 600 (80 late) is
    // expected in 80, the 1200 (20 late) in 20, so 400 more fit in 20
    expect(l.roomInMs('e0', 400, 2048, 120)).toBe(20)
    first()
    expect(l.roomInMs('e0', 1000, 2048, 10)).toBe(0)
  })
})
