import type { IncomingMessage, ServerResponse } from 'node:http'

/** Largest request body accepted (a 128k-token prompt is ~512 KB under the 4-chars rule). */
export const MAX_BODY_BYTES = 32 * 1024 * 1024

/** Reads the whole body as UTF-8; resolves null if the client went away or the body is too large. */
export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    let done = false
    const finish = (v: string | null): void => {
      if (done) return
      done = true
      resolve(v)
    }
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size > limit) {
        finish(null)
        req.destroy()
        return
      }
      chunks.push(c)
    })
    req.on('end', () => finish(Buffer.concat(chunks).toString('utf8')))
    req.on('error', () => finish(null))
    req.on('close', () => finish(null))
  })
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  extra: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...extra,
  })
  res.end(body)
}

export function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch {
    return { ok: false }
  }
}
