import { Registry } from 'prom-client'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ManualClock } from '../../../src/clock.js'
import { createTelemetry } from '../../../src/telemetry/index.js'
import { testConfig } from './fixtures.js'

/** The periodic per-class summary: written every summary_interval_ms, not even computed when info is off. */
describe('the summary timer', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  function run(infoEnabled: boolean | undefined): object[] {
    vi.useFakeTimers()
    const lines: object[] = []
    const logger =
      infoEnabled === undefined
        ? { info: (o: object) => lines.push(o) }
        : { info: (o: object) => lines.push(o), isLevelEnabled: (l: string) => l !== 'info' || infoEnabled }
    const telemetry = createTelemetry(testConfig({ telemetry: { summary_interval_ms: 1_000 } }), {
      registry: new Registry(),
      clock: new ManualClock(1_000_000),
      logger,
    })
    vi.advanceTimersByTime(2_500)
    telemetry.close()
    return lines
  }

  it('writes a line per class each interval while info is enabled (or the logger cannot say)', () => {
    const on = run(true)
    expect(on.length).toBeGreaterThanOrEqual(2)
    expect(on[0]).toMatchObject({ window: '1m', offered: 0 })
    expect(run(undefined)).toHaveLength(on.length)
  })

  it('skips the summary while the log level hides info', () => {
    expect(run(false)).toEqual([])
  })
})
