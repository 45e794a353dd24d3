/**
 * The Responses API (`client.responses.create`, the openai SDK's recommended API, which
 * vLLM serves) is admission-controlled like chat: its `input`, `max_output_tokens` and
 * `stream` are read, its stream's deltas are its tokens, its usage is accounted.
 * The upstream here speaks the Responses API as vLLM does (the simulator does not).
 */
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AdmissionGateway, startAdmissionGateway } from '../helpers/admission-gateway.js'
import { type FakeUpstream, sleep, startUpstream } from '../helpers/upstream.js'

const response = (
  status: string,
  text: string,
  usage = { input_tokens: 7, output_tokens: 3, total_tokens: 10 },
) => ({
  id: 'resp_1',
  object: 'response',
  created_at: 1,
  status,
  model: 'm',
  output: [
    {
      type: 'message',
      id: 'msg_1',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    },
  ],
  usage,
})

const event = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

let up: FakeUpstream
let gw: AdmissionGateway
let client: OpenAI

beforeAll(async () => {
  up = await startUpstream(async (req, res, seen) => {
    if (req.url !== '/v1/responses') {
      res.writeHead(404).end()
      return
    }
    const body = JSON.parse(seen.body) as { stream?: boolean }
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(response('completed', 'Hello there')))
      return
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(event('response.created', { response: response('in_progress', '') }))
    for (const [i, d] of ['Hel', 'lo', ' there'].entries()) {
      await sleep(5)
      res.write(
        event('response.output_text.delta', {
          item_id: 'msg_1',
          output_index: 0,
          content_index: 0,
          delta: d,
          sequence_number: i,
        }),
      )
    }
    res.end(event('response.completed', { response: response('completed', 'Hello there') }))
  })
  gw = await startAdmissionGateway({ endpoints: [up.url] })
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0 })
})

afterAll(async () => {
  await gw.close()
  await up.close()
})

describe('the Responses API through the gateway', () => {
  it('is admitted like chat, not streamed: its input is estimated and its usage accounted', async () => {
    const { data, response: raw } = await client.responses
      .create({ model: 'm', input: [{ role: 'user', content: 'x'.repeat(400) }], max_output_tokens: 64 })
      .withResponse()
    expect(data.output_text).toBe('Hello there')
    expect(raw.headers.get('x-gateway-class')).toBe('interactive')
    expect(Number(raw.headers.get('x-gateway-predicted-ttft-ms'))).toBeGreaterThan(0)
    const t = gw.tickets.at(-1)!
    expect(t.api).toBe('responses')
    expect(t.promptTokens).toBe(100 + 4) // 400 characters, one input item
    expect(t.expectedOutputTokens).toBe(64) // max_output_tokens
    expect(t.usage).toEqual({ promptTokens: 7, completionTokens: 3 })
    expect(t.finishReason).toBe('stop')
    // the body went as the client sent it: no stream_options (not a Responses API field)
    expect(JSON.parse(up.seen.at(-1)!.body)).not.toHaveProperty('stream_options')
  })

  it('streamed: each output-text delta is a token, the first one is the TTFT', async () => {
    const stream = await client.responses.create({ model: 'm', input: 'Say hello', stream: true })
    let text = ''
    for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta
    expect(text).toBe('Hello there')
    await sleep(20)
    const t = gw.tickets.at(-1)!
    expect(t.outcome).toBe('ok')
    expect(t.contentChunks).toBe(3)
    expect(t.firstTokenAt).toBeGreaterThan(t.dispatchedAt!)
    expect(t.itlMs).toHaveLength(2)
    expect(t.usage).toEqual({ promptTokens: 7, completionTokens: 3 })
    expect(JSON.parse(up.seen.at(-1)!.body)).not.toHaveProperty('stream_options')
  })

  it('counts as a generation in admission: an unknown class is refused as on chat', async () => {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-priority': 'urgent' },
      body: JSON.stringify({ model: 'm', input: 'hi' }),
    })
    expect(res.status).toBe(400)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('GW_ERR_UNKNOWN_CLASS')
  })
})
