import { describe, expect, it } from 'vitest'
import type { LedgerSnapshot } from '../../../src/backends/ledger.js'
import { correctLoad } from '../../../src/backends/load-correction.js'

const ledger = (l: Partial<LedgerSnapshot> = {}): LedgerSnapshot => ({
  requests: 0,
  tokens: 0,
  newRequests: 0,
  newTokens: 0,
  doneRequests: 0,
  doneTokens: 0,
  ...l,
})

describe('correctLoad', () => {
  it('is the scrape itself when nothing happened since', () => {
    const e = correctLoad({
      load: { waiting: 2, running: 5, kvUsage: 0.5, kvCapacityTokens: 1000 },
      ledger: ledger(),
      fresh: true,
      ageMs: 40,
      capacity: {},
    })
    expect(e).toEqual({
      waiting: 2,
      running: 5,
      kvUsage: 0.5,
      kvCapacityTokens: 1000,
      inflightRequests: 0,
      inflightTokens: 0,
      fresh: true,
      ageMs: 40,
    })
  })

  it('adds what was sent since and removes what finished (the burst case)', () => {
    const e = correctLoad({
      load: { waiting: 0, running: 3, kvUsage: 0.2, kvCapacityTokens: 10_000 },
      ledger: ledger({
        requests: 6,
        tokens: 3000,
        newRequests: 5,
        newTokens: 2500,
        doneRequests: 1,
        doneTokens: 500,
      }),
      fresh: true,
      ageMs: 90,
      capacity: { maxNumSeqs: 4 },
    })
    // R1 = 3 - 1 = 2; the queue was empty, so new requests run up to the batch limit 4: 2 move
    expect(e.running).toBe(4)
    expect(e.waiting).toBe(3)
    expect(e.kvUsage).toBeCloseTo(0.2 + (2500 - 500) / 10_000, 10)
  })

  it('queues new requests behind an existing queue, and lets finished ones leave it', () => {
    const e = correctLoad({
      load: { waiting: 2, running: 1 },
      ledger: ledger({ requests: 3, newRequests: 3, doneRequests: 2 }),
      fresh: true,
      ageMs: 0,
      capacity: {},
    })
    expect(e.running).toBe(0) // 1 - 2, floored
    expect(e.waiting).toBe(1 + 3) // 2 - (2 - 1) + 3 new
  })

  it('moves the requests the scrape saw waiting and that have had their first token since into the batch', () => {
    // the scrape saw 3 of the gateway's prompts waiting for their step; 2 have their first
    // token now: a queue of 1 is left, not 3 (max_server_waiting 0 would hold every
    // dispatch until the next scrape)
    const e = correctLoad({
      load: { waiting: 3, running: 10 },
      ledger: ledger({ requests: 13, startedRequests: 2 }),
      fresh: true,
      ageMs: 80,
      capacity: {},
    })
    expect(e.waiting).toBe(1)
    expect(e.running).toBe(12)
    // never more than the scrape's queue
    const f = correctLoad({
      load: { waiting: 1, running: 10 },
      ledger: ledger({ requests: 13, startedRequests: 5 }),
      fresh: true,
      ageMs: 80,
      capacity: {},
    })
    expect([f.waiting, f.running]).toEqual([0, 11])
  })

  it('lets the ledger stand in for KV usage when the engine does not report it', () => {
    const e = correctLoad({
      load: { waiting: 0, running: 1 },
      ledger: ledger({ requests: 2, tokens: 1024, newRequests: 1, newTokens: 512 }),
      fresh: true,
      ageMs: 0,
      capacity: { kvTokens: 4096 },
    })
    expect(e.kvUsage).toBe(0.25)
    expect(e.kvCapacityTokens).toBe(4096)
    expect(
      correctLoad({ load: { waiting: 0, running: 0 }, ledger: ledger(), fresh: true, ageMs: 0, capacity: {} })
        .kvUsage,
    ).toBeUndefined()
  })

  it('keeps KV usage inside 0..1', () => {
    const full = correctLoad({
      load: { waiting: 0, running: 1, kvUsage: 0.95, kvCapacityTokens: 1000 },
      ledger: ledger({ requests: 1, tokens: 500, newRequests: 1, newTokens: 500 }),
      fresh: true,
      ageMs: 0,
      capacity: {},
    })
    expect(full.kvUsage).toBe(1)
    const empty = correctLoad({
      load: { waiting: 0, running: 0, kvUsage: 0.1, kvCapacityTokens: 1000 },
      ledger: ledger({ doneRequests: 3, doneTokens: 900 }),
      fresh: true,
      ageMs: 0,
      capacity: {},
    })
    expect(empty.kvUsage).toBe(0)
  })

  it('never scraped: everything in flight counts as new, and it is not fresh', () => {
    const e = correctLoad({
      load: undefined,
      ledger: ledger({ requests: 2, tokens: 20, newRequests: 0, doneRequests: 5 }),
      fresh: false,
      ageMs: undefined,
      capacity: {},
    })
    expect(e).toEqual({ waiting: 0, running: 2, inflightRequests: 2, inflightTokens: 20, fresh: false })
  })
})
