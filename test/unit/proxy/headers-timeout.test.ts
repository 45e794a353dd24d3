import { describe, expect, it } from 'vitest'
import { configSchema } from '../../../src/config/schema.js'
import { headersTimeoutMs } from '../../../src/proxy/forward.js'
import { Ticket } from '../../../src/ticket.js'

const { classes } = configSchema.parse({})
const CEILING = 300_000

function ticket(stream: boolean, expectedOutput = 100): Ticket {
  const t = new Ticket('t', 'POST', '/v1/chat/completions', 0)
  t.stream = stream
  t.expectedOutputTokens = expectedOutput
  return t
}

describe('the wait for response headers', () => {
  it("is bounded by the class's objectives, not the 300 s ceiling", () => {
    // interactive: TTFT 500 ms, TPOT 50 ms
    expect(headersTimeoutMs(ticket(true), classes.interactive?.slo, CEILING)).toBe(1000) // 2 x 500 ms
    expect(headersTimeoutMs(ticket(false, 100), classes.interactive?.slo, CEILING)).toBe(2 * (500 + 50 * 100))
  })

  it('keeps the ceiling for a class with no objective short enough, and a floor of 1 s', () => {
    // batch: done within 30 min, a bound far over the ceiling
    expect(headersTimeoutMs(ticket(false), classes.batch?.slo, CEILING)).toBe(CEILING)
    expect(headersTimeoutMs(ticket(true), undefined, CEILING)).toBe(CEILING)
    const fast = configSchema.parse({ classes: { interactive: { slo: { ttft_ms: 100 } } } }).classes
      .interactive?.slo
    expect(headersTimeoutMs(ticket(true), fast, CEILING)).toBe(1000)
    expect(headersTimeoutMs(ticket(true), classes.interactive?.slo, 800)).toBe(800)
  })
})
