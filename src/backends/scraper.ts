/**
 * Scrapes one endpoint's metrics on its own timer.
 *
 * One scrape at a time: the next is scheduled when the previous ends, `interval_ms` later
 * after a success and, while scrapes fail, after an exponential backoff (interval x 2^n,
 * at most `maxBackoffMs`). Each scrape has a deadline of `timeout_ms` (connect, headers and
 * body together) and a body limit. Timers are unref'd: a scraper never keeps the process
 * alive. `stop()` clears the timer and aborts a scrape in flight.
 *
 * Scrapes use their own single-connection undici Client, not the endpoint's request Pool:
 * with every pool connection busy streaming, a scrape queued behind them would time out
 * and make a busy endpoint look stale exactly when its load matters most.
 */
import type { Dispatcher } from 'undici'

export const SCRAPE_BODY_LIMIT_BYTES = 8 * 1024 * 1024
export const SCRAPE_MAX_BACKOFF_MS = 2_000

export type ScrapeFailure = 'connect' | 'timeout' | 'http' | 'too_large' | 'error'

export type ScrapeOutcome =
  | { readonly ok: true; readonly body: string }
  | { readonly ok: false; readonly failure: ScrapeFailure; readonly detail: string }

export interface ScraperOptions {
  readonly client: Dispatcher
  readonly path: string
  readonly intervalMs: number
  readonly timeoutMs: number
  readonly maxBackoffMs?: number
  /** Called as each scrape is sent; its return value is passed back to `onResult`. */
  readonly onStart: () => number
  readonly onResult: (ticket: number, outcome: ScrapeOutcome) => void
}

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
])

function classify(err: unknown, timedOut: boolean): ScrapeOutcome {
  const code = (err as { code?: unknown } | null)?.code
  const name = (err as { name?: unknown } | null)?.name
  const detail = typeof code === 'string' ? code : typeof name === 'string' ? name : 'error'
  if (
    timedOut ||
    name === 'TimeoutError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return { ok: false, failure: 'timeout', detail }
  }
  if (typeof code === 'string' && CONNECT_CODES.has(code)) return { ok: false, failure: 'connect', detail }
  return { ok: false, failure: 'error', detail }
}

/** GETs `path` and returns its body as text, or why it could not. Never throws. */
export async function fetchMetrics(
  client: Dispatcher,
  path: string,
  timeoutMs: number,
  stop: AbortSignal,
  limit = SCRAPE_BODY_LIMIT_BYTES,
): Promise<ScrapeOutcome> {
  const deadline = AbortSignal.timeout(timeoutMs)
  const signal = AbortSignal.any([stop, deadline])
  try {
    const res = await client.request({
      method: 'GET',
      path,
      signal,
      headers: { accept: 'text/plain;version=0.0.4;q=0.9,*/*;q=0.1' },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    })
    if (res.statusCode !== 200) {
      await res.body.dump().catch(() => undefined)
      return { ok: false, failure: 'http', detail: `status ${res.statusCode}` }
    }
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of res.body) {
      const buf = chunk as Buffer
      size += buf.length
      if (size > limit) {
        res.body.destroy()
        return { ok: false, failure: 'too_large', detail: `body over ${limit} bytes` }
      }
      chunks.push(buf)
    }
    return { ok: true, body: Buffer.concat(chunks).toString('utf8') }
  } catch (err) {
    return classify(err, deadline.aborted)
  }
}

export class Scraper {
  private timer: NodeJS.Timeout | undefined
  private readonly stopper = new AbortController()
  private running = false
  private stopped = false
  private failures = 0
  private nextAt: number | undefined

  constructor(private readonly opts: ScraperOptions) {}

  /** Consecutive failed scrapes. */
  get consecutiveFailures(): number {
    return this.failures
  }

  /** Delay before the next scrape, given the failures so far. */
  nextDelayMs(): number {
    const max = Math.max(this.opts.intervalMs, this.opts.maxBackoffMs ?? SCRAPE_MAX_BACKOFF_MS)
    return this.failures === 0
      ? this.opts.intervalMs
      : Math.min(max, this.opts.intervalMs * 2 ** this.failures)
  }

  /** Milliseconds until the next scheduled scrape (timer time), when one is scheduled. */
  msUntilNext(): number | undefined {
    return this.nextAt === undefined ? undefined : Math.max(0, this.nextAt - Date.now())
  }

  start(): void {
    if (this.running || this.stopped) return
    this.running = true
    this.schedule(0)
  }

  stop(): void {
    this.stopped = true
    this.running = false
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.nextAt = undefined
    this.stopper.abort()
  }

  /** One scrape now (also used by tests). */
  async scrapeOnce(): Promise<ScrapeOutcome> {
    const ticket = this.opts.onStart()
    const outcome = await fetchMetrics(
      this.opts.client,
      this.opts.path,
      this.opts.timeoutMs,
      this.stopper.signal,
    )
    if (this.stopped) return outcome
    this.failures = outcome.ok ? 0 : this.failures + 1
    this.opts.onResult(ticket, outcome)
    return outcome
  }

  private schedule(delay: number): void {
    if (this.stopped) return
    this.nextAt = Date.now() + delay
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.scrapeOnce()
        .catch(() => undefined) // onResult threw: keep scraping
        .finally(() => this.schedule(this.nextDelayMs()))
    }, delay)
    this.timer.unref()
  }
}
