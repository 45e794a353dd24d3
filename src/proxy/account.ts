/**
 * Accounting, the last step of every request however it ended: one telemetry record and
 * one log line. It is an observer of every exchange, so it runs exactly once per ticket.
 *
 * Requests shed as `overloaded` (the event loop is behind: overload-guard.ts) are counted
 * like any other but logged as one warn line per SHED_LOG_MS ("requests shed as
 * overloaded", with how many), not one each: under a flood of 20,000 requests a second their
 * lines were the flood again, written synchronously to stdout, and a log reader that fell
 * behind (a full pipe) stalled the event loop for seconds.
 */
import type { FastifyBaseLogger as Logger } from 'fastify'
import type { ExchangeObserver } from '../exchange.js'
import { asVerdict, type Verdict } from '../telemetry/index.js'
import type { Ticket } from '../ticket.js'

/** What the accounting stage needs from telemetry. */
export interface RequestRecorder {
  /**
   * Count one finished request. Telemetry returns the Verdict it judged, which the request's
   * log line then carries (judged once); what a recorder that judges nothing returns
   * (`{ record() {} }` with telemetry off, a test's `(t) => tickets.push(t)`) is ignored.
   */
  record(ticket: Ticket): unknown
  /** The plain HTTP counter and duration histogram, for every public route. */
  observeHttp?(route: string, method: string, status: number, seconds: number): void
}

const round = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms * 100) / 100)

/**
 * One info line per request. With a verdict: `verdict` is its kind (`good`, `missed`,
 * `rejected`, `failed`, `client_error`, `cancelled`, `invalid`), and `missed` names the
 * objectives a missed request missed (`['ttft']`, `['tpot', 'e2e']`, ...).
 */
export function logTicket(logger: Logger, t: Ticket, verdict?: Verdict): void {
  logger.info(
    {
      reqId: t.id,
      method: t.method,
      path: t.path,
      tenant: t.tenant,
      class: t.class,
      model: t.model,
      pool: t.poolName,
      backend: t.backend,
      stream: t.stream,
      status: t.status,
      outcome: t.outcome,
      verdict: verdict?.kind,
      missed: verdict?.kind === 'missed' ? verdict.missed : undefined,
      error: t.errorCode,
      degraded: t.degraded.length > 0 ? t.degraded : undefined,
      promptTokens: t.usage?.promptTokens,
      completionTokens: t.usage?.completionTokens,
      predictedTtftMs: round(t.predictedTtftMs),
      ttftMs: round(t.ttftMs),
      e2eMs: round(t.e2eMs),
      finishReason: t.finishReason,
    },
    'request',
  )
}

/** Requests shed as overloaded are logged together, one line per this many ms. */
export const SHED_LOG_MS = 1_000

export class Accounting implements ExchangeObserver {
  /** Shed as overloaded since the last summary line. */
  private shed = 0
  private shedSince = 0
  private shedTimer: NodeJS.Timeout | undefined

  constructor(
    private readonly recorder: RequestRecorder,
    private readonly logger: Logger,
  ) {}

  /** Writes the shed summary now, if requests were shed since the last one (at close: the line is not lost). */
  flush(): void {
    clearTimeout(this.shedTimer)
    if (this.shed > 0) this.logShed()
  }

  private logShed(): void {
    const n = this.shed
    this.shed = 0
    this.shedTimer = undefined
    this.logger.warn(
      { shed: n, windowMs: Math.round(performance.now() - this.shedSince), error: 'GW_ERR_OVERLOADED' },
      'requests shed as overloaded (the event loop is behind; each is counted in slo_gateway_rejected_total)',
    )
  }

  ended(t: Ticket): void {
    let verdict: Verdict | undefined
    try {
      verdict = asVerdict(this.recorder.record(t))
      const seconds = ((t.finishedAt ?? t.arrivedAt) - t.arrivedAt) / 1000
      this.recorder.observeHttp?.(t.route, t.method, t.status, seconds)
    } catch (err) {
      this.logger.error({ err, reqId: t.id }, 'telemetry record failed')
    }
    if (t.errorCode === 'GW_ERR_OVERLOADED') {
      if (this.shed++ === 0) {
        this.shedSince = performance.now()
        this.shedTimer = setTimeout(() => this.logShed(), SHED_LOG_MS).unref()
      }
      return
    }
    logTicket(this.logger, t, verdict)
  }
}
