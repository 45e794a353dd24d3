/**
 * Accounting, the last step of every request however it ended: one telemetry record and
 * one log line. It is an observer of every exchange, so it runs exactly once per ticket.
 */
import type { FastifyBaseLogger as Logger } from 'fastify'
import type { ExchangeObserver } from '../exchange.js'
import type { Ticket } from '../ticket.js'

/** What the accounting stage needs from telemetry. */
export interface RequestRecorder {
  record(ticket: Ticket): void
  /** The plain HTTP counter and duration histogram, for every public route. */
  observeHttp?(route: string, method: string, status: number, seconds: number): void
}

const round = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms * 100) / 100)

export function logTicket(logger: Logger, t: Ticket): void {
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

export class Accounting implements ExchangeObserver {
  constructor(
    private readonly recorder: RequestRecorder,
    private readonly logger: Logger,
  ) {}

  ended(t: Ticket): void {
    try {
      this.recorder.record(t)
      const seconds = ((t.finishedAt ?? t.arrivedAt) - t.arrivedAt) / 1000
      this.recorder.observeHttp?.(t.route, t.method, t.status, seconds)
    } catch (err) {
      this.logger.error({ err, reqId: t.id }, 'telemetry record failed')
    }
    logTicket(this.logger, t)
  }
}
