import { describe, expect, it } from 'vitest'
import { vllmAdapter } from '../../../src/backends/adapters/vllm.js'
import { Ledger } from '../../../src/backends/ledger.js'
import { LoadState } from '../../../src/backends/load-state.js'

const text = (running: number, waiting = 0, extra = '') =>
  `vllm:num_requests_running{engine="0"} ${running}\nvllm:num_requests_waiting{engine="0"} ${waiting}\n${extra}`
const ok = (body: string) => ({ ok: true as const, body })

describe('LoadState', () => {
  it('is fresh until stale_after_ms after the scrape was sent', () => {
    const s = new LoadState(vllmAdapter, 1000, 250)
    const l = new Ledger()
    expect(s.isFresh(0)).toBe(false) // never scraped
    expect(s.apply(ok(text(1)), 100, 130, l)).toBe('fresh')
    expect(s.load).toEqual({ waiting: 0, running: 1 })
    expect(s.ageMs(600)).toBe(500)
    expect(s.isFresh(1100)).toBe(true)
    expect(s.isFresh(1101)).toBe(false)
  })

  it('a timeout lets the data age; a refused connection or unreadable text makes it stale at once', () => {
    const s = new LoadState(vllmAdapter, 1000, 250)
    const l = new Ledger()
    s.apply(ok(text(1)), 0, 10, l)
    expect(s.apply({ ok: false, failure: 'timeout', detail: 'TimeoutError' }, 100, 1100, l)).toBe('failed')
    expect(s.isFresh(500)).toBe(true)
    expect(s.apply({ ok: false, failure: 'connect', detail: 'ECONNREFUSED' }, 200, 210, l)).toBe('failed')
    expect(s.isFresh(210)).toBe(false)
    s.apply(ok(text(2)), 300, 310, l)
    expect(s.isFresh(310)).toBe(true)
    expect(s.apply(ok('<html>oops</html>'), 400, 410, l)).toBe('unreadable')
    expect(s.isFresh(410)).toBe(false)
    expect(s.last).toMatchObject({ ok: false, failure: 'unreadable' })
  })

  it('the same text repeated by an idle server stays fresh', () => {
    const s = new LoadState(vllmAdapter, 1000, 250)
    const l = new Ledger()
    for (let t = 0; t <= 5000; t += 100) expect(s.apply(ok(text(0)), t, t + 5, l)).toBe('fresh')
    expect(s.isFresh(5005)).toBe(true)
  })

  it('the same text twice around a request in flight is frozen: it ages from when it stopped changing', () => {
    const s = new LoadState(vllmAdapter, 1000, 250)
    const l = new Ledger()
    const live = (n: number) => text(1, 0, `vllm:generation_tokens_total ${n}\n`)
    s.apply(ok(live(1)), 0, 5, l)
    const req = l.open(10, 50) // a long request, in the batch the whole time
    s.apply(ok(live(2)), 100, 105, l)
    s.apply(ok(live(3)), 200, 205, l) // the text stops moving here
    expect(s.apply(ok(live(3)), 300, 305, l)).toBe('fresh') // the request is not past the grace at 200 yet
    // in flight since 50 < 400 - 250, still open: but standing still for less than
    // stale_after_ms may be one long engine step
    for (let t = 400; t <= 1100; t += 100) expect(s.apply(ok(live(3)), t, t + 5, l)).toBe('fresh')
    expect(s.apply(ok(live(3)), 1200, 1205, l)).toBe('frozen') // still since 100: over 1,000 ms
    expect(s.loadAt).toBe(100) // the last scrape that returned older text: the data is no newer than that
    expect(s.isFresh(1205)).toBe(false) // stale as soon as judged
    expect(s.last).toMatchObject({ ok: false, failure: 'frozen' })
    expect(s.frozen).toBe(true)
    l.close(req)
    expect(s.apply(ok(live(3)), 1300, 1305, l)).toBe('frozen') // the verdict sticks to the text
    expect(s.loadAt).toBe(100)
    expect(s.apply(ok(live(4)), 1400, 1405, l)).toBe('fresh') // it moves again: fresh at once
    expect(s.frozen).toBe(false)
    expect(s.isFresh(1405)).toBe(true)
  })

  it("a slow engine's long steps, with requests in flight the whole time, are not frozen", () => {
    const s = new LoadState(vllmAdapter, 1000, 250)
    const l = new Ledger()
    l.open(1, 0) // a stream running throughout
    // its numbers move once a step, 450 ms apart: four scrapes 100 ms apart see each step's text
    for (let t = 0; t <= 5000; t += 100)
      expect(s.apply(ok(text(1, 0, `c ${Math.floor(t / 450)}\n`)), t, t + 5, l)).toBe('fresh')
    expect(s.isFresh(5005)).toBe(true)
  })

  it('moving text with requests in flight, and requests that end between scrapes, are not frozen', () => {
    const s = new LoadState(vllmAdapter, 1000, 250)
    const l = new Ledger()
    l.open(1, 0)
    for (let t = 0; t <= 3000; t += 100)
      expect(s.apply(ok(text(1, 0, `c ${t}\n`)), t, t + 5, l)).toBe('fresh')
    const idle = new LoadState(vllmAdapter, 1000, 250)
    const l2 = new Ledger()
    for (let t = 0; t <= 3000; t += 100) {
      const quick = l2.open(1, t + 10) // a 400: answered at once
      l2.close(quick)
      expect(idle.apply(ok(text(0)), t, t + 5, l2)).toBe('fresh')
    }
  })
})
