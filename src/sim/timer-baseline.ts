import { type TimerClock as Clock, systemClock as realClock } from '../clock.js'
import { SampleRing } from './sample-ring.js'

export interface LagSummary {
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly n: number
}

/**
 * Runs a timer loop with no work on the same absolute schedule EngineLoop uses (same early-wake
 * rule) and reports its lag in ms: the floor that timers and the OS set for `sim_step_lag_seconds`
 * on this machine, so the bench can tell the simulator's own lag from the platform's.
 */
export function measureTimerLag(
  periodMs: number,
  steps: number,
  clock: Clock = realClock,
): Promise<LagSummary> {
  const lags = new SampleRing(steps)
  let deadline = clock.now() + periodMs
  return new Promise((resolve) => {
    const wake = (): void => {
      const now = clock.now()
      if (now >= deadline - 1) {
        lags.add(Math.max(0, now - deadline))
        deadline += periodMs
      }
      if (lags.count >= steps) {
        resolve({ p50: lags.quantile(0.5), p99: lags.quantile(0.99), max: lags.quantile(1), n: lags.count })
        return
      }
      clock.schedule(deadline - clock.now(), wake)
    }
    clock.schedule(deadline - clock.now(), wake)
  })
}
