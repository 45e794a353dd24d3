/**
 * The decode guard at the gate counts in the next step at an endpoint: the prompts sent
 * there since the step in progress began are prefilled in it, and every stream decoding
 * there waits through it. The guard's mean shows that step only once it has ended, so
 * without it a burst of prompts passed the guard within one step.
 */
import { describe, expect, it } from 'vitest'
import { gatesOnOneEndpoint } from './fake-pool.js'

function tenStreamsAt30ms() {
  const { gates, clock, view } = gatesOnOneEndpoint()
  const streams = Array.from({ length: 10 }, () => ({ stepSeen: -1, stepSeenAt: Number.NEGATIVE_INFINITY }))
  for (const s of streams) {
    gates.tokenFrom(view.name, s, clock.now())
    gates.firstToken(view.name, clock.now(), 100)
  }
  for (let step = 0; step < 8; step++) {
    clock.advance(30)
    for (const s of streams) gates.observeGap(view.name, s, 30, clock.now())
  }
  clock.advance(1) // a step began with the last gaps: what is sent now goes into the next one
  return { gates, clock, view, streams }
}

describe('EndpointGates: the decode guard counts in the next step', () => {
  it('holds a prompt while the prompts pending for the next step would take the ITL over the limit', () => {
    const { gates, view } = tenStreamsAt30ms()
    const open = (className: string, floor = false) =>
      gates.open(className, 300, 200, { pastGuard: floor })(view)
    expect(gates.itl(view.name)).toBeCloseTo(30, 6) // within 50 x 0.9
    expect(open('interactive')).toBe(true)
    gates.dispatched(view.name, 300, 100) // a short prompt pending: the next step stays short
    expect(open('interactive')).toBe(true)
    // 4,000 tokens more pending: a step of ~200 ms for the ten streams
    gates.dispatched(view.name, 4_000, 200)
    expect(open('interactive')).toBe(false)
    expect(open('batch')).toBe(false) // batch holds for interactive's objective
    expect(open('batch', true)).toBe(true) // a request under its class's floor skips the guard
  })

  it('does not hold a lone prompt for its own step', () => {
    const { gates, view } = tenStreamsAt30ms()
    expect(gates.open('interactive', 4_100, 4_000)(view)).toBe(true)
  })

  it('counts the step that just ended for the streams whose tokens of its end are not read yet', () => {
    const { gates, clock, view, streams } = tenStreamsAt30ms()
    const open = () => gates.open('interactive', 300, 200)(view)
    // a step of 30 ms ends, and the dispatcher runs after its first token is read: open
    clock.advance(29)
    gates.observeGap(view.name, streams[0]!, 30, clock.now())
    expect(open()).toBe(true)
    for (const s of streams.slice(1)) gates.observeGap(view.name, s, 30, clock.now())
    // then a step of 150 ms (a long prefill in it) ends: one gap of 150 ms among the decayed
    // thirty-odd of 30 keeps the measured mean within 50 x 0.9, the nine still owed do not
    clock.advance(150)
    gates.observeGap(view.name, streams[0]!, 150, clock.now())
    expect(gates.itl(view.name)).toBeLessThan(45)
    expect(open()).toBe(false)
    // read whole, the burst says the same
    for (const s of streams.slice(1)) gates.observeGap(view.name, s, 150, clock.now())
    expect(gates.itl(view.name)).toBeGreaterThan(45)
    expect(open()).toBe(false)
  })
})
