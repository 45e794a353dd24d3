/**
 * pino JSON logs. Credentials never reach a log line: authorization, x-api-key and
 * cookies are redacted wherever headers are logged.
 */
import { type DestinationStream, type Logger, pino } from 'pino'

const SECRET_HEADERS = ['authorization', 'proxy-authorization', 'x-api-key', 'cookie', 'set-cookie']

export const REDACT_PATHS = SECRET_HEADERS.flatMap((h) =>
  ['req.headers', 'headers', 'request.headers', 'res.headers'].map((base) => `${base}["${h}"]`),
)

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const opts = {
    level,
    base: { service: 'slo-gateway' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  }
  return destination === undefined ? pino(opts) : pino(opts, destination)
}
