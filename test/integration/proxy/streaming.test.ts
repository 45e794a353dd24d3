import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readyBackends } from '../../helpers/backends.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { chunkEvent, type FakeUpstream, sleep, startUpstream, usageEvent } from '../../helpers/upstream.js'

const CHUNKS = 6
const GAP_MS = 100
/** A server that sends its head at once and its first token this much later (a long prefill). */
const PREFILL_MS = 300

describe('streaming pass-through', () => {
  let up: FakeUpstream
  let gw: TestGateway
  const sentAt: number[] = []

  beforeAll(async () => {
    up = await startUpstream(async (_req, res, seen) => {
      const body = JSON.parse(seen.body) as { model: string; stream_options?: { include_usage?: boolean } }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      if (body.model === 'prefill') {
        res.flushHeaders()
        await sleep(PREFILL_MS)
      }
      for (let i = 0; i < CHUNKS; i++) {
        if (i > 0) await sleep(GAP_MS)
        sentAt.push(performance.now())
        res.write(chunkEvent(`tok${i} `, i === CHUNKS - 1 ? 'length' : null))
      }
      if (body.stream_options?.include_usage) res.write(usageEvent(11, CHUNKS))
      res.end('data: [DONE]\n\n')
    })
    gw = await startGateway(await readyBackends([up.url]))
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  async function stream(extra: object = {}) {
    sentAt.length = 0
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
        ...extra,
      }),
    })
    const received: { at: number; text: string }[] = []
    for await (const c of res.body) received.push({ at: performance.now(), text: (c as Buffer).toString() })
    return { res, received, text: received.map((r) => r.text).join('') }
  }

  it('relays each chunk as it is sent, while the upstream is still streaming', async () => {
    const { res, received } = await stream()
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/)
    // every content chunk reached the client within 20 ms of the upstream writing it
    const contentChunks = received.filter((r) => r.text.includes('tok'))
    expect(contentChunks.length).toBe(CHUNKS)
    contentChunks.forEach((r, i) => {
      expect(r.text).toContain(`tok${i} `)
      expect(r.at - sentAt[i]!).toBeLessThan(20)
    })
    // the first chunk arrived long before the upstream finished
    expect(sentAt[CHUNKS - 1]! - (contentChunks[0]?.at as number)).toBeGreaterThan(GAP_MS * (CHUNKS - 2))
  })

  it('sends the head on as it comes, not with the first token (a head and a chunk that come together go out together)', async () => {
    sentAt.length = 0
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'prefill', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    })
    // the client has the status and the gateway's headers before the server wrote any token
    const headAt = performance.now()
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-gateway-backend']).toBeDefined()
    expect(sentAt).toEqual([])
    const text = await res.body.text()
    expect(sentAt[0]).toBeGreaterThan(headAt)
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true)
  })

  it('gives the client exactly the upstream bytes, without the usage chunk it did not ask for', async () => {
    const { text } = await stream()
    let expected = ''
    for (let i = 0; i < CHUNKS; i++) expected += chunkEvent(`tok${i} `, i === CHUNKS - 1 ? 'length' : null)
    expected += 'data: [DONE]\n\n'
    expect(text).toBe(expected)
    // ...while the gateway asked for usage and recorded it
    const seen = up.seen.at(-1)
    expect(JSON.parse(seen?.body ?? '{}').stream_options).toEqual({ include_usage: true })
    const t = gw.tickets.at(-1)
    expect(t?.usage).toEqual({ promptTokens: 11, completionTokens: CHUNKS })
    expect(t?.contentChunks).toBe(CHUNKS)
    expect(t?.finishReason).toBe('length')
    expect(t?.outcome).toBe('ok')
    expect(t?.itlMs.length).toBe(CHUNKS - 1)
    expect(t?.ttftMs).toBeGreaterThan(0)
  })

  it('keeps the usage chunk when the client asked for it', async () => {
    const { text } = await stream({ stream_options: { include_usage: true } })
    expect(text).toContain(usageEvent(11, CHUNKS))
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true)
  })
})
