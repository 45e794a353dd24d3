import { describe, expect, it } from 'vitest'
import { Breaker } from '../../../src/backends/breaker.js'
import { ManualClock } from '../../../src/clock.js'

const config = { consecutive_failures: 3, base_ejection_ms: 1000, max_ejection_ms: 8000 }

function failN(
  b: Breaker,
  n: number,
  result: 'connect_error' | 'server_error' | 'timeout' = 'connect_error',
) {
  for (let i = 0; i < n; i++) b.onResult(result, b.onSend())
}

describe('Breaker', () => {
  it('ejects after consecutive failures; an ok in between resets the count', () => {
    const clock = new ManualClock()
    const b = new Breaker(clock, config)
    failN(b, 2)
    b.onResult('ok', b.onSend())
    failN(b, 2, 'server_error')
    expect(b.state()).toBe('closed')
    b.onResult('client_abort', b.onSend()) // says nothing about the endpoint
    failN(b, 1, 'timeout')
    expect(b.state()).toBe('open')
    expect(b.allows()).toBe(false)
    expect(b.retryInMs()).toBe(1000)
  })

  it('half-opens after the ejection time and lets exactly one probe through', () => {
    const clock = new ManualClock()
    const b = new Breaker(clock, config)
    failN(b, 3)
    clock.advance(999)
    expect(b.state()).toBe('open')
    clock.advance(1)
    expect(b.state()).toBe('half_open')
    expect(b.allows()).toBe(true)
    const probe = b.onSend()
    expect(probe).toBe(true)
    expect(b.allows()).toBe(false) // one probe at a time
    b.onResult('ok', probe)
    expect(b.state()).toBe('closed')
    expect(b.snapshot()).toMatchObject({ consecutiveFailures: 0, ejectionsTotal: 1 })
  })

  it('doubles the ejection on each failed probe, up to the max', () => {
    const clock = new ManualClock()
    const b = new Breaker(clock, config)
    failN(b, 3)
    const times: number[] = []
    for (let i = 0; i < 5; i++) {
      times.push(b.retryInMs())
      clock.advance(b.retryInMs())
      b.onResult('connect_error', b.onSend()) // the probe fails
    }
    expect(times).toEqual([1000, 2000, 4000, 8000, 8000])
  })

  it('a probe the client aborted frees the slot for another probe', () => {
    const clock = new ManualClock()
    const b = new Breaker(clock, config)
    failN(b, 3)
    clock.advance(1000)
    b.onResult('client_abort', b.onSend())
    expect(b.state()).toBe('half_open')
    expect(b.allows()).toBe(true)
  })

  it('a successful scrape closes a half-open breaker, not an open one', () => {
    const clock = new ManualClock()
    const b = new Breaker(clock, config)
    failN(b, 3)
    b.onScrapeOk()
    expect(b.state()).toBe('open')
    clock.advance(1000)
    b.onScrapeOk()
    expect(b.state()).toBe('closed')
  })

  it('late failures of requests sent before the ejection do not extend it', () => {
    const clock = new ManualClock()
    const b = new Breaker(clock, config)
    const inflight = [b.onSend(), b.onSend(), b.onSend(), b.onSend()]
    for (const p of inflight.slice(0, 3)) b.onResult('connect_error', p)
    clock.advance(500)
    b.onResult('connect_error', inflight[3]!)
    expect(b.retryInMs()).toBe(500)
  })

  it('the row of ejections starts over after a healthy period', () => {
    const clock = new ManualClock()
    const b = new Breaker(clock, config)
    failN(b, 3)
    clock.advance(1000)
    b.onResult('ok', b.onSend())
    failN(b, 3)
    expect(b.retryInMs()).toBe(2000) // soon after: the row goes on
    clock.advance(2000)
    b.onResult('ok', b.onSend())
    clock.advance(8000)
    failN(b, 3)
    expect(b.retryInMs()).toBe(1000) // healthy for max_ejection_ms: back to base
  })
})
