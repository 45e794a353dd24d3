/**
 * Load shedding for a flood the process cannot parse: a timer measures how far behind the
 * event loop runs (how late it fires), and while that is over `server.shed_event_loop_delay_ms`,
 * each new request on the public listener is refused with 503 `overloaded` at once, in
 * Fastify's onRequest hook: before its body is read, parsed or admitted, so a flood costs
 * little per request and memory stays bounded, and the requests already admitted keep the
 * CPU. The lag decays as soon as the timer fires on time again, so the gateway recovers by
 * itself when the flood stops. The admin listener (/healthz) is never shed.
 */
import type { FastifyInstance } from 'fastify'
import { GatewayError } from './errors.js'
import type { Pipeline } from './proxy/pipeline.js'

/** How often the lag is sampled. */
const SAMPLE_MS = 50

export interface OverloadGuard {
  /** The event loop's lag now, ms (the last sample, decayed). */
  lagMs(): number
  close(): void
}

export function installOverloadGuard(
  app: FastifyInstance,
  pipeline: Pipeline,
  thresholdMs: number,
): OverloadGuard {
  let lag = 0
  let expected = performance.now() + SAMPLE_MS
  const timer = setInterval(() => {
    const now = performance.now()
    const late = Math.max(0, now - expected)
    // a late sample raises the lag at once; a punctual one halves it (recover within a few samples)
    lag = late >= lag ? late : Math.max(late, lag / 2)
    expected = now + SAMPLE_MS
  }, SAMPLE_MS)
  timer.unref()
  if (thresholdMs > 0) {
    app.addHook('onRequest', (request, reply, done) => {
      // the lag of a loop that has not yet run its timer is the time since it was due
      const behind = Math.max(lag, performance.now() - expected)
      if (behind <= thresholdMs) return done()
      const err = new GatewayError(
        'GW_ERR_OVERLOADED',
        { lagMs: Math.round(behind) },
        { retryAfterMs: 1_000 },
      )
      pipeline.refuse(pipeline.begin(request, reply, 'json'), err)
    })
  }
  return {
    lagMs: () => lag,
    close: () => clearInterval(timer),
  }
}
