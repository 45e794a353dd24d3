import { describe, expect, it } from 'vitest'
import { Ledger } from '../../../src/backends/ledger.js'

describe('Ledger', () => {
  it('is exact: the sum of open entries, each closed once', () => {
    const l = new Ledger()
    const entries = Array.from({ length: 100 }, (_, i) => l.open(10 + i))
    expect(l.requests).toBe(100)
    expect(l.tokens).toBe(100 * 10 + (99 * 100) / 2)
    for (const e of entries) expect(l.close(e)).toBe(true)
    for (const e of entries) expect(l.close(e)).toBe(false) // second close: no-op
    expect(l.requests).toBe(0)
    expect(l.tokens).toBe(0)
  })

  it('ignores entries of another ledger and bad token counts', () => {
    const a = new Ledger()
    const b = new Ledger()
    const e = a.open(5)
    expect(b.close(e)).toBe(false)
    expect(a.requests).toBe(1)
    const nan = a.open(Number.NaN)
    const neg = a.open(-3)
    expect(a.tokens).toBe(5)
    a.close(nan)
    a.close(neg)
    a.close(e)
    expect(a.snapshot()).toEqual({
      requests: 0,
      tokens: 0,
      newRequests: 0,
      newTokens: 0,
      doneRequests: 0,
      doneTokens: 0,
      startedRequests: 0,
    })
  })

  it('counts the requests the applied scrape saw waiting that have had their first token since, while in flight', () => {
    const l = new Ledger()
    const a = l.open(100)
    const b = l.open(100)
    const scrape = l.beginScrape()
    const after = l.open(100) // sent after the scrape: not in its numbers
    l.applyScrape(scrape)
    l.started(a)
    l.started(a) // once
    l.started(after)
    expect(l.snapshot().startedRequests).toBe(1)
    l.started(b)
    l.close(b) // finished: counted as done instead
    expect(l.snapshot()).toMatchObject({ startedRequests: 1, doneRequests: 1 })
    // the next scrape counts them as it finds them
    l.applyScrape(l.beginScrape())
    expect(l.snapshot().startedRequests).toBe(0)
  })

  it('tells requests sent after the applied scrape from those it already counted', () => {
    const l = new Ledger()
    const before = l.open(100) // sent before any scrape
    const scrape = l.beginScrape()
    const during = l.open(10) // sent while the scrape was on its way: not in its numbers
    l.applyScrape(scrape)
    expect(l.snapshot()).toMatchObject({ requests: 2, newRequests: 1, newTokens: 10, doneRequests: 0 })
    const after = l.open(1)
    expect(l.snapshot()).toMatchObject({ newRequests: 2, newTokens: 11 })
    l.close(before) // counted by the scrape, finished since
    expect(l.snapshot()).toMatchObject({ requests: 2, newRequests: 2, doneRequests: 1, doneTokens: 100 })
    l.close(during)
    expect(l.snapshot()).toMatchObject({ newRequests: 1, newTokens: 1, doneRequests: 1 })
    const next = l.beginScrape()
    l.applyScrape(next)
    expect(l.snapshot()).toMatchObject({ requests: 1, newRequests: 0, doneRequests: 0 }) // `after` is in the new scrape
    l.close(after)
    expect(l.snapshot()).toMatchObject({ requests: 0, tokens: 0, doneRequests: 1, doneTokens: 1 })
  })

  it('ignores an older scrape applied late', () => {
    const l = new Ledger()
    const s1 = l.beginScrape()
    const s2 = l.beginScrape()
    l.open(1)
    l.applyScrape(s2)
    l.applyScrape(s1)
    expect(l.snapshot().newRequests).toBe(1)
  })

  it('counts requests sent before a time', () => {
    const l = new Ledger()
    l.open(1, 100)
    l.open(1, 200)
    l.open(1, 300)
    expect(l.openedBefore(250)).toBe(2)
    expect(l.openedBefore(100)).toBe(0)
  })
})
