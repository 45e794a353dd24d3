/**
 * HTTP/1.1 by hand, for what a client library will not send: conflicting framing headers,
 * duplicate headers, headers sent a byte at a time. `rawExchange` writes the bytes, reads
 * until the server closes (or `timeoutMs`), and splits what came back into responses.
 */
import { connect, type Socket } from 'node:net'

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

export interface RawResult {
  /** Every response read, in order (a smuggled second request would show as a second one). */
  readonly responses: RawResponse[]
  /** The server closed the connection (rather than the timeout ending the read). */
  readonly closed: boolean
  readonly raw: string
}

/** Splits a byte stream of HTTP/1.1 responses (content-length or chunked bodies). */
export function parseResponses(raw: string): RawResponse[] {
  const out: RawResponse[] = []
  let rest = raw
  while (rest.startsWith('HTTP/1.')) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) break
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n')
    const headers: Record<string, string> = {}
    for (const l of lines) {
      const i = l.indexOf(':')
      if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
    }
    let body = ''
    let after = rest.slice(end + 4)
    if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length'])
      body = Buffer.from(after).subarray(0, n).toString()
      after = Buffer.from(after).subarray(n).toString()
    } else if (headers['transfer-encoding']?.includes('chunked')) {
      for (;;) {
        const lineEnd = after.indexOf('\r\n')
        if (lineEnd < 0) break
        const size = Number.parseInt(after.slice(0, lineEnd), 16)
        after = after.slice(lineEnd + 2)
        if (!(size > 0)) {
          after = after.slice(after.indexOf('\r\n') + 2)
          break
        }
        body += after.slice(0, size)
        after = after.slice(size + 2)
      }
    } else {
      body = after
      after = ''
    }
    out.push({ status: Number(statusLine?.split(' ')[1]), headers, body })
    rest = after
  }
  return out
}

/** Opens a connection to `url`'s host and port. */
export function openSocket(url: string): Promise<Socket> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const s = connect({ host: u.hostname, port: Number(u.port) }, () => resolve(s))
    s.once('error', reject)
  })
}

/**
 * Sends `chunks` (each after `gapMs`), then reads until the server closes or `timeoutMs`
 * passes. Errors on the socket (a reset) end the read like a close.
 */
export async function rawExchange(
  url: string,
  chunks: (string | Buffer)[],
  opts: { timeoutMs?: number; gapMs?: number } = {},
): Promise<RawResult> {
  const s = await openSocket(url)
  const got: Buffer[] = []
  s.on('data', (c: Buffer) => got.push(c))
  const done = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), opts.timeoutMs ?? 5_000)
    const end = () => {
      clearTimeout(timer)
      resolve(true)
    }
    s.once('close', end)
    s.once('end', end)
    s.on('error', () => {})
  })
  for (const c of chunks) {
    if (s.destroyed) break
    s.write(c)
    if (opts.gapMs !== undefined) await new Promise((r) => setTimeout(r, opts.gapMs))
  }
  const closed = await done
  s.destroy()
  const raw = Buffer.concat(got).toString()
  return { responses: parseResponses(raw), closed, raw }
}
