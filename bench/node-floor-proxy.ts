/**
 * `node bench/dist/node-floor-proxy.js --port P --upstream http://HOST:PORT`
 *
 * The floor of a Node.js proxy, for bench:peers:overhead: the least any gateway built on
 * node:http and undici pays per request on this machine. It reads the body, parses it
 * once as JSON (what a gateway that reads the request must at least do), forwards it with
 * undici's Pool.dispatch and relays the answer as it comes: no routing, no checks, no
 * logging, no metrics. Not a product: a yardstick, so the report can tell the cost of Node
 * itself from the cost of what slo-gateway does on top of it.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http'
import { parseArgs } from 'node:util'
import { Pool } from 'undici'

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade'])

const { values } = parseArgs({
  options: { port: { type: 'string' }, upstream: { type: 'string' } },
})
if (values.port === undefined || values.upstream === undefined) {
  process.stderr.write('usage: node-floor-proxy --port P --upstream URL\n')
  process.exit(2)
}
const pool = new Pool(values.upstream, { connections: 128, pipelining: 1, keepAliveTimeout: 60_000 })

function requestHeaders(h: IncomingHttpHeaders, length: number): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(h)) if (typeof v === 'string' && !HOP.has(k) && k !== 'host') out[k] = v
  out['content-length'] = String(length)
  return out
}

createServer((req, res) => {
  const parts: Buffer[] = []
  req.on('data', (c: Buffer) => parts.push(c))
  req.on('end', () => {
    const body = Buffer.concat(parts)
    try {
      if (body.length > 0) JSON.parse(body.toString('utf8'))
    } catch {
      res.writeHead(400).end()
      return
    }
    pool.dispatch(
      {
        method: req.method as 'POST',
        path: req.url ?? '/',
        headers: requestHeaders(req.headers, body.length),
        body,
      },
      {
        onConnect() {},
        onHeaders(status, raw) {
          const h: Record<string, string> = {}
          for (let i = 0; i < raw.length; i += 2) {
            const k = String(raw[i]).toLowerCase()
            if (!HOP.has(k)) h[k] = String(raw[i + 1])
          }
          res.writeHead(status, h)
          return true
        },
        onData(chunk) {
          res.write(chunk)
          return true
        },
        onComplete() {
          res.end()
        },
        onError() {
          if (res.headersSent) res.destroy()
          else res.writeHead(502).end()
        },
      },
    )
  })
}).listen(Number(values.port), '127.0.0.1', () => process.stdout.write(`listening ${values.port}\n`))
