/**
 * The dispatch forecast (dispatch-forecast.ts): when a queued request goes, played step by
 * step from what the gateway knows of its endpoints, with its own gates' rules: the prefill
 * budget frees when the step prefilling its prompts ends, the decode guard opens at the
 * step end whose gaps bring its decaying mean within the limit, the queue ahead drains into
 * the budget.
 */
import { describe, expect, it } from 'vitest'
import { type EndpointNow, forecastDispatch } from '../../../src/admission/dispatch-forecast.js'
import { StepModel } from '../../../src/admission/step-timeline.js'

// a step: 10 ms + 0.025 ms a prompt token (40,000 tokens/s), per sequence and context ~0
const model = new StepModel({ stepMs: 10, prefillTokensPerS: 40_000 })
const step = (prefill: number) => model.ms(prefill, 0, 0)

const none = { tokens: 0, requests: 0 }
/** A request whose KV need is what it computes (no output to speak of). */
const fc = (
  eps: readonly EndpointNow[],
  ahead: { tokens: number; requests: number },
  own: number,
  arriving: number,
  horizon: number,
  goesTo?: number,
) => forecastDispatch(eps, ahead, own, own, arriving, horizon, goesTo)
const requests = (n: number, each: number) => ({ tokens: n * each, requests: n })

function endpoint(over: Partial<EndpointNow> = {}): EndpointNow {
  return {
    residualMs: 0,
    stepMs: 10,
    inStepTokens: 0,
    nextTokens: 0,
    decodes: 0,
    contextTokens: 0,
    budgetTokens: 8000,
    guard: undefined,
    openNow: true,
    slots: 256,
    kvFree: Number.POSITIVE_INFINITY,
    ends: [],
    model,
    ...over,
  }
}

describe('forecastDispatch', () => {
  it('goes now when every gate is open, behind the step in progress', () => {
    const f = fc([endpoint({ residualMs: 7, nextTokens: 500 })], none, 1000, 0, 1000)
    expect(f?.waitMs).toBe(0)
    expect(f?.residualMs).toBe(7)
    expect(f?.withTokens).toBe(500) // the prompts sent since that step began share its step
  })

  it('waits for the step prefilling a full budget to end', () => {
    const f = fc(
      [endpoint({ residualMs: 120, stepMs: 210, inStepTokens: 8000, openNow: false })],
      none,
      1000,
      0,
      1000,
    )
    expect(f?.waitMs).toBe(120)
    // it is sent as the next step begins (a decode step): it waits for that one, then its own
    expect(f?.residualMs).toBeCloseTo(step(0), 5)
  })

  it('waits a step more when the budget is full with prompts that the step in progress did not take', () => {
    const f = fc(
      [endpoint({ residualMs: 5, inStepTokens: 0, nextTokens: 8000, openNow: false })],
      none,
      1000,
      0,
      1000,
    )
    expect(f?.waitMs).toBeCloseTo(5 + step(8000), 5)
  })

  it('drains the queue ahead a budget at a time', () => {
    const eps = [endpoint({ residualMs: 3, inStepTokens: 8000, openNow: false })]
    const first = fc(eps, requests(3, 2000), 1000, 0, 5000) // ahead and own fit one budget
    const second = fc(eps, requests(6, 2000), 1000, 0, 5000) // the next budget
    expect(first?.waitMs).toBe(3)
    expect(first?.withTokens).toBe(6000)
    // the first burst (8,000 of the 12,000) prefills in the step after the next: then room
    expect(second?.waitMs).toBeCloseTo(3 + step(0) + step(8000), 5)
    expect(second?.withTokens).toBe(4000)
  })

  it('adds those expected to arrive behind it while it waits, as far as the budget has room', () => {
    const eps = [endpoint({ residualMs: 100, stepMs: 150, inStepTokens: 5000, openNow: false })]
    const f = fc(eps, requests(1, 1000), 1000, 10, 1000) // 10 tokens/ms arriving
    expect(f?.waitMs).toBe(100)
    // 10 tokens/ms over its 100 ms wait and the 10 ms step then in progress
    expect(f?.withTokens).toBeCloseTo(1000 + 10 * (100 + step(0)), 5)
    const full = fc(eps, requests(1, 1000), 1000, 1000, 1000)
    expect(full?.withTokens).toBe(1000 + 6000) // no more than the budget's room after it
  })

  it('opens the decode guard at the step end that brings its decaying mean within the limit', () => {
    // 10 streams decoding at ~10 ms a step; the guard's mean is 60 ms over 100 gaps' weight.
    // Each step end decays the weights by e^(-step / 200) and adds 10 gaps of ~10 ms: the
    // mean is ~55 ms after the step in progress (4 ms), then 51, 47, 44, 42, 39.5 ms
    const closed = { tauMs: 200, sumMs: 60 * 100, gaps: 100, limitMs: 40, open: false }
    const f = fc(
      [endpoint({ residualMs: 4, decodes: 10, guard: closed, openNow: false })],
      none,
      500,
      0,
      2000,
    )
    expect(f).toBeDefined()
    expect(f!.waitMs).toBeCloseTo(4 + 5 * 10.1, 0) // the sixth step end
    // within a 45 ms limit, it opens at the fourth (44.7 ms)
    const within = { ...closed, limitMs: 45 }
    const g = fc(
      [endpoint({ residualMs: 4, decodes: 10, guard: within, openNow: false })],
      none,
      500,
      0,
      2000,
    )
    expect(g!.waitMs).toBeCloseTo(4 + 3 * 10.1, 0)
  })

  it('weighs a long step against the short ones before it: one prefill step does not close the guard', () => {
    // a mean of 15 ms over 400 gaps' weight; a 200 ms prefill step ends in 50 ms
    const guard = { tauMs: 200, sumMs: 15 * 400, gaps: 400, limitMs: 40, open: true }
    const eps = [
      endpoint({ residualMs: 50, stepMs: 200, inStepTokens: 7600, decodes: 40, guard, openNow: false }),
    ]
    const f = fc(eps, none, 500, 0, 2000)
    // at its end (weights x e^(-50/200)): (4,673 + 40 x 200) / (311.5 + 40) = 36 ms, within 40: open
    expect(f?.waitMs).toBe(50)
    // over a 30 ms limit it closes, and the next decode steps (~10 ms) bring it back within
    const tight = fc([{ ...eps[0]!, guard: { ...guard, limitMs: 30 } }], none, 500, 0, 2000)
    expect(tight!.waitMs).toBeGreaterThan(60)
    expect(tight!.waitMs).toBeLessThan(200)
  })

  it('holds the queue while the prompts pending for the next step would take the guard over its limit, as the guard does', () => {
    // a mean of 40 ms over 20 gaps' weight, within a 45 ms limit; 10 streams decode at ~10 ms
    const guard = { tauMs: 200, sumMs: 40 * 20, gaps: 20, limitMs: 45, open: true }
    // 200 tokens pending for the next step (15 ms): (800 + 150) / 30 = 31.7 ms, within: it goes now
    const light = endpoint({ residualMs: 5, nextTokens: 200, decodes: 10, guard })
    expect(fc([light], none, 200, 0, 2000)?.waitMs).toBe(0)
    // 4,000 pending (a step of 110 ms for 10 streams: 63 ms): it goes when that step has begun,
    // at the end of the step in progress, whose short gaps bring the mean down
    const heavy = endpoint({ residualMs: 5, nextTokens: 4000, decodes: 10, guard })
    expect(fc([heavy], none, 200, 0, 2000)?.waitMs).toBe(5)
  })

  it("sends the queue ahead only as far as the guard's next step has room, as the dispatcher does, one request after another", () => {
    // a mean of 40 ms over 20 gaps' weight, within a 45 ms limit; 10 streams decode at ~10 ms:
    // the next step may last up to (45 x 30 - 800) / 10 = 55 ms, ~1,800 prompt tokens
    const guard = { tauMs: 200, sumMs: 40 * 20, gaps: 20, limitMs: 45, open: true }
    const ep = endpoint({ residualMs: 5, decodes: 10, guard })
    // one request of 1,000 ahead: it and this one go now (the guard checks the pending before
    // each), and of those arriving behind it only the ~300 tokens the room has left join them
    const one = fc([ep], requests(1, 1000), 500, 1000, 2000)
    expect(one?.waitMs).toBe(0)
    expect(one!.withTokens).toBeGreaterThan(1000 + 250)
    expect(one!.withTokens).toBeLessThan(1000 + 350)
    // four ahead: two go now (the second fills the room); the other two and this one when the
    // step in progress ends and the next begins with those two (its step is the one after);
    // the budget alone (8,000) would have sent all four with it at once
    const four = fc([ep], requests(4, 1000), 500, 0, 2000)
    expect(four?.waitMs).toBe(5)
    expect(four?.withTokens).toBe(2000)
    const ungated = fc([endpoint({ residualMs: 5, decodes: 10 })], requests(4, 1000), 500, 0, 2000)
    expect([ungated?.waitMs, ungated?.withTokens]).toEqual([0, 4000])
  })

  it('sends whole requests: a head that does not fit the room left waits for the step to end', () => {
    // 7,000 tokens pending in a step that ends in 40 ms; 1,000 of room; two requests of
    // 1,500 ahead: neither fits, nothing goes now (a fluid of tokens would send 1,000 now
    // and put a step of them before this request)
    const eps = [endpoint({ residualMs: 40, stepMs: 190, inStepTokens: 7000, openNow: false })]
    const f = fc(eps, requests(2, 1500), 300, 0, 2000)
    expect(f?.waitMs).toBe(40)
    expect(f?.withTokens).toBe(3000)
  })

  it('sends a head larger than the whole budget once nothing is pending there, as the dispatcher does', () => {
    // a 4,000-token budget; one request of 5,000 queued ahead of this one; the step in
    // progress (40 ms left) prefills 1,000. The dispatcher (fitsBudget) takes the head
    // when nothing awaits its first token there, so: the step ends, the head goes, a
    // decode step, then the head's prefill step; after it this request goes
    const eps = [endpoint({ residualMs: 40, stepMs: 50, inStepTokens: 1000, budgetTokens: 4000 })]
    const f = fc(eps, requests(1, 5000), 300, 0, 2000)
    expect(f).toBeDefined()
    expect(f!.waitMs).toBeCloseTo(40 + step(0) + step(5000), 5)
    expect(f!.withTokens).toBe(0)
    // itself larger than the budget, behind it: the same
    expect(fc(eps, requests(1, 5000), 4500, 0, 2000)?.waitMs).toBeCloseTo(40 + step(0) + step(5000), 5)
  })

  it("waits for a batch slot when the engine's batch is full: the first running stream to end frees it", () => {
    // max_num_seqs reached; the running streams have 30, 80 and 200 tokens to go
    const full = endpoint({
      residualMs: 5,
      decodes: 3,
      openNow: false,
      slots: 0,
      ends: [30, 80, 200].map((steps) => ({ steps, kvTokens: 100 })),
    })
    const f = fc([full], none, 500, 0, 5000)
    // 1 step in progress (5 ms) then 29 decode steps (their context grows a token a step):
    // the 30th step's end frees a slot
    expect(Math.abs(f!.waitMs - (5 + 29 * model.ms(0, 3, 0)))).toBeLessThan(1)
    // two requests queued ahead take the first two slots: it goes when the third frees
    const behind = fc([full], requests(2, 300), 500, 0, 5000)
    expect(behind?.waitMs).toBeGreaterThan(5 + 198 * model.ms(0, 3, 0))
  })

  it("waits for KV room under the class's limit: the running requests that end free theirs", () => {
    // 600 tokens of KV free; the request needs 1,000; the running ones end after 10 and 40
    // steps, freeing 300 and 2,000
    const tight = endpoint({ residualMs: 5, decodes: 2, openNow: false, kvFree: 600 })
    const ends = [
      { steps: 10, kvTokens: 300 },
      { steps: 40, kvTokens: 2000 },
    ]
    const f = forecastDispatch([{ ...tight, ends }], none, 1000, 1000, 0, 5000)
    expect(Math.abs(f!.waitMs - (5 + 39 * model.ms(0, 2, 0)))).toBeLessThan(1)
  })

  it('going at once, goes where the picker sends it, not where its first token would come first', () => {
    const soon = endpoint({ residualMs: 5 })
    const late = endpoint({ residualMs: 60, stepMs: 80, inStepTokens: 2800 })
    expect(fc([soon, late], none, 500, 0, 1000)?.residualMs).toBe(5)
    expect(fc([soon, late], none, 500, 0, 1000, 1)?.residualMs).toBe(60)
  })

  it('takes the endpoint that has room first', () => {
    const busy = endpoint({ residualMs: 200, stepMs: 210, inStepTokens: 8000, openNow: false })
    const free = endpoint({ residualMs: 8, inStepTokens: 8000, openNow: false })
    expect(fc([busy, free], none, 1000, 0, 1000)?.waitMs).toBe(8)
  })

  it('says nothing past its horizon', () => {
    const eps = [endpoint({ residualMs: 100, stepMs: 210, inStepTokens: 8000, openNow: false })]
    expect(fc(eps, requests(40, 2000), 1000, 0, 500)).toBeUndefined()
  })

  it('plays the batch as it shrinks and grows: streams ending shorten the steps, the queue ahead lengthens them once it decodes', () => {
    // an engine whose decode step is 5 ms + 0.5 ms a stream (learned), prefill 40,000 tokens/s
    const perSeq = new StepModel({ stepMs: 5, prefillTokensPerS: 40_000 })
    for (let i = 0; i < 400; i++) {
      const d = i % 60
      const p = (i * 37) % 3000
      perSeq.observe([1, p, d, 0], 5 + 0.025 * p + 0.5 * d)
    }
    expect(perSeq.ms(0, 40, 0)).toBeCloseTo(25, 1)
    // 40 streams decoding (25 ms steps); the guard's mean is 40 ms and its limit 20 ms: with
    // the batch as it is, the steps stay over the limit and the guard never opens
    const guard = { tauMs: 200, sumMs: 40 * 200, gaps: 200, limitMs: 20, open: false }
    const stuck = endpoint({ residualMs: 5, stepMs: 25, decodes: 40, guard, openNow: false, model: perSeq })
    expect(fc([stuck], none, 500, 0, 2000)).toBeUndefined()
    // 30 of them have 3 tokens left: after the third step 10 decode, at 10 ms a step, and the
    // mean (~36 ms then) decays within the limit in 200 x ln(26 / 10) ~ 190 ms
    const ends = [
      ...Array.from({ length: 30 }, () => ({ steps: 3, kvTokens: 500 })),
      ...Array.from({ length: 10 }, () => ({ steps: 400, kvTokens: 500 })),
    ]
    const f = fc([{ ...stuck, ends }], none, 500, 0, 2000)
    expect(f).toBeDefined()
    expect(f!.waitMs).toBeGreaterThan(5 + 2 * 25 + 15 * 10)
    expect(f!.waitMs).toBeLessThan(5 + 2 * 25 + 25 * 10)
    expect(f!.decodeStepMs).toBeCloseTo(10, 0) // the batch it joins: the 10 left
    // the same endpoint open, 3,000 tokens of budget, and 60 requests of 100 tokens queued
    // ahead: 30 go now, their prefill step (85 ms) ends at 90 ms and the next 30 go; once
    // prefilled the first 30 decode too (40 streams), so the step that prefills the second 30
    // (100 ms) gives 40 gaps over the limit: the guard closes at 190 ms, where with the batch
    // as it was (10 streams) it stayed open and this request went; with nothing ahead it
    // goes at once
    const calm = { tauMs: 200, sumMs: 10 * 200, gaps: 200, limitMs: 20, open: true }
    const open = endpoint({
      residualMs: 5,
      stepMs: 10,
      decodes: 10,
      guard: calm,
      budgetTokens: 3000,
      model: perSeq,
      ends: Array.from({ length: 10 }, () => ({ steps: 400, kvTokens: 500 })),
    })
    expect(fc([open], none, 100, 0, 2000)?.waitMs).toBe(0)
    const behind = fc([open], requests(60, 100), 100, 0, 2000)
    expect(behind === undefined || behind.waitMs > 5 + 85 + 100 + 25).toBe(true)
  })
})
