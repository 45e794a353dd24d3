/**
 * What a limiter store throws when it cannot answer. Internal: never sent to a client. The
 * limits stage catches it and applies the configured policy (fail-open to a local limiter,
 * or fail-closed with 503). `code` is stable; match on it, not on the message.
 */
export type LimiterStoreErrorCode =
  /** The store did not answer within its per-call timeout. */
  | 'LIMITER_ERR_TIMEOUT'
  /** Not connected (down, refusing, reconnecting), or the connection broke mid-call. */
  | 'LIMITER_ERR_UNAVAILABLE'
  /** The store answered with an error or a reply of the wrong shape (a script bug, a wrong server). */
  | 'LIMITER_ERR_REPLY'

export class LimiterStoreError extends Error {
  override readonly name = 'LimiterStoreError'
  readonly code: LimiterStoreErrorCode
  /** The store's registry name. */
  readonly store: string

  constructor(code: LimiterStoreErrorCode, store: string, message: string, options?: { cause?: unknown }) {
    super(`${store} limiter store: ${message}`, options)
    this.code = code
    this.store = store
  }
}

/** Redis replies that mean "not now" rather than "wrong": the server is loading, busy, failing over. */
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|NOREPLICAS)\b/

/** Maps whatever ioredis rejected with to a LimiterStoreError. */
export function redisStoreError(err: unknown): LimiterStoreError {
  if (err instanceof LimiterStoreError) return err
  const message = err instanceof Error ? err.message : String(err)
  const name = err instanceof Error ? err.name : ''
  if (/timed out/i.test(message))
    return new LimiterStoreError('LIMITER_ERR_TIMEOUT', 'redis', message, { cause: err })
  if (name === 'ReplyError' && !TRANSIENT_REPLY.test(message)) {
    return new LimiterStoreError('LIMITER_ERR_REPLY', 'redis', message, { cause: err })
  }
  return new LimiterStoreError('LIMITER_ERR_UNAVAILABLE', 'redis', message, { cause: err })
}
