/**
 * The gateway as a whole (createRuntime: admission, telemetry, tenants and their limits)
 * in front of a fake model server that answers every request at once, for the bad-input
 * properties. Its logs are captured so a test can look for what must never be in them.
 * Requests go in through `inject` (no sockets: thousands of cases in seconds) or through
 * the real listener (`url`) where HTTP framing matters.
 */
import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { configSchema } from '../../../src/config/schema.js'
import { createLogger } from '../../../src/logger.js'
import { createRuntime, type GatewayRuntime } from '../../../src/runtime.js'
import { chunkEvent, sleep, usageEvent, vllmMetrics } from '../../helpers/upstream.js'

export const GOOD_KEY = 'sk-fuzz-good-key-0123456789'
export const OTHER_KEY = 'sk-fuzz-other-key-9876543210'
export const sha = (s: string) => createHash('sha256').update(s).digest('hex')

export interface FuzzStack {
  readonly runtime: GatewayRuntime
  readonly url: string
  readonly adminUrl: string
  /** Every log line (raw JSON text), in order. */
  readonly logText: string[]
  /** Requests the fake server saw (counted, not kept: bodies may be huge). */
  upstreamRequests(): number
  close(): Promise<void>
}

/** A model server that answers anything: a completion (or its stream) with usage, or `{}`. */
/** Answers a request itself (true) or leaves it to the default answer (false). */
export type Override = (req: IncomingMessage, res: ServerResponse, body: string) => boolean

async function startAnswerer(
  override?: Override,
): Promise<{ server: Server; url: string; count: () => number }> {
  let n = 0
  let running = 0
  const server = createServer((req, res) => {
    if (req.url === '/metrics') {
      res.end(vllmMetrics(running))
      return
    }
    n++
    running++
    res.on('close', () => running--)
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (override?.(req, res, Buffer.concat(chunks).toString()) === true) return
      let stream = false
      try {
        stream = (JSON.parse(Buffer.concat(chunks).toString()) as { stream?: unknown }).stream === true
      } catch {}
      if (stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.end(`${chunkEvent('ok')}${chunkEvent('', 'stop')}${usageEvent(3, 1)}data: [DONE]\n\n`)
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          id: 'c1',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
        }),
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    count: () => n,
  }
}

/**
 * Two tenants with keys (acme: interactive only, with limits; other: any class), and
 * `anonymous` when asked (so bodies without a key reach parse and admission).
 */
export async function startFuzzStack(
  opts: { anonymous?: boolean; raw?: Record<string, unknown>; level?: string; override?: Override } = {},
) {
  const up = await startAnswerer(opts.override)
  const config = configSchema.parse({
    ...opts.raw,
    server: {
      port: 0,
      admin_port: 0,
      host: '127.0.0.1',
      admin_host: '127.0.0.1',
      ...(opts.raw?.server as object),
    },
    log: { level: opts.level ?? 'info' },
    auth: opts.anonymous === true ? { anonymous: 'anon' } : {},
    tenants: [
      {
        id: 'acme',
        api_keys: [sha(GOOD_KEY)],
        allowed_classes: ['interactive'],
        limits: { rpm: 1_000_000, tpm: 1_000_000_000, max_concurrent: 10_000 },
      },
      { id: 'other', api_keys: [sha(OTHER_KEY)] },
      ...(opts.anonymous === true ? [{ id: 'anon', limits: { max_concurrent: 10_000 } }] : []),
    ],
    backends: {
      pools: [
        { name: 'chat', models: ['m', 'm-alias-target'], aliases: ['m-alias'], endpoints: [up.url] },
        { name: 'any', models: ['*'], endpoints: [up.url] },
      ],
    },
  })
  const logText: string[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line) logText.push(line)
      cb()
    },
  })
  const runtime = await createRuntime(config, createLogger(opts.level ?? 'info', sink))
  const { app, admin } = runtime.apps
  await app.listen({ port: 0, host: '127.0.0.1' })
  await admin.listen({ port: 0, host: '127.0.0.1' })
  for (let i = 0; i < 200 && !runtime.apps.ready(); i++) await sleep(20)
  if (!runtime.apps.ready()) throw new Error('the fuzz stack never became ready')
  const stack: FuzzStack = {
    runtime,
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    adminUrl: `http://127.0.0.1:${(admin.server.address() as AddressInfo).port}`,
    logText,
    upstreamRequests: up.count,
    close: async () => {
      await app.close()
      await admin.close()
      await runtime.close()
      up.server.closeAllConnections()
      await new Promise<void>((resolve) => up.server.close(() => resolve()))
    },
  }
  return stack
}
