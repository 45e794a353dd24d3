/**
 * SIGTERM while a client holds a connection with a request half sent (headers never
 * finished) or a connection it opened and never used: nothing is in flight, so the gateway
 * exits at once (exit 0) instead of waiting for Node's request timeout to reap the socket.
 */
import { connect } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { chatUpstream, startGatewayProcess } from '../helpers/gateway-process.js'
import type { FakeUpstream } from '../helpers/upstream.js'

let up: FakeUpstream
beforeAll(async () => {
  up = await chatUpstream()
})
afterAll(async () => {
  await up?.close()
})

it('exits promptly on SIGTERM with half-open client connections', async () => {
  const gw = await startGatewayProcess({
    backends: { pools: [{ name: 'p', models: ['*'], endpoints: [up.url] }] },
    auth: { anonymous: 'demo' },
  })
  const port = Number(new URL(gw.url).port)
  const half = connect(port, '127.0.0.1', () =>
    half.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n'),
  )
  const idle = connect(port, '127.0.0.1')
  for (const s of [half, idle]) s.on('error', () => {})
  await new Promise((r) => setTimeout(r, 200))
  const t0 = performance.now()
  gw.proc.child.kill('SIGTERM')
  const code = await gw.proc.exited
  const took = performance.now() - t0
  console.log(`exited ${code} ${Math.round(took)} ms after SIGTERM`)
  expect(code).toBe(0)
  // well before Node's 5 min request timeout or its 30 s connection sweep
  expect(took).toBeLessThan(10_000)
  half.destroy()
  idle.destroy()
}, 60_000)
