/**
 * The official `openai` npm client against the gateway in front of the simulator:
 * streamed and plain chat, completions, usage on request, and errors mapped to the SDK's
 * exception classes.
 */
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SimGateway, startSimGateway } from '../helpers/sim-gateway.js'

describe('the openai client through the gateway', () => {
  let gw: SimGateway
  let client: OpenAI
  beforeAll(async () => {
    gw = await startSimGateway({ scale: 1, profile: 'tiny' })
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0 })
  })
  afterAll(() => gw.close())

  it('streams a chat completion chunk by chunk', async () => {
    // ignore_eos: vLLM's extension, to produce exactly max_tokens
    const params: OpenAI.ChatCompletionCreateParamsStreaming & { ignore_eos: boolean } = {
      model: 'sim/tiny',
      stream: true,
      max_tokens: 12,
      messages: [{ role: 'user', content: 'Say hello' }],
      ignore_eos: true,
    }
    const stream = await client.chat.completions.create(params)
    let text = ''
    let chunks = 0
    let finish: string | null = null
    for await (const chunk of stream) {
      chunks++
      text += chunk.choices[0]?.delta.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
      expect(chunk.usage ?? undefined).toBeUndefined() // not asked for: not sent
    }
    expect(chunks).toBe(12)
    expect(text.length).toBeGreaterThan(0)
    expect(finish).toBe('length')
  })

  it('sends usage in the last chunk when the client asks for it', async () => {
    const params: OpenAI.ChatCompletionCreateParamsStreaming & { ignore_eos: boolean } = {
      model: 'sim/tiny',
      stream: true,
      max_tokens: 5,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'abcdefgh' }],
      ignore_eos: true,
    }
    const stream = await client.chat.completions.create(params)
    let usage: OpenAI.CompletionUsage | undefined | null
    for await (const chunk of stream) usage = chunk.usage ?? usage
    expect(usage).toMatchObject({ prompt_tokens: 2 + 4, completion_tokens: 5 })
  })

  it('answers plain chat and completions, and lists the model', async () => {
    const chat = await client.chat.completions.create({
      model: 'sim/tiny',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(chat.choices[0]?.message.role).toBe('assistant')
    expect(chat.usage?.completion_tokens).toBeGreaterThan(0)
    const completion = await client.completions.create({
      model: 'sim/tiny',
      prompt: 'Once upon',
      max_tokens: 4,
    })
    expect(completion.choices[0]?.text.length).toBeGreaterThan(0)
    const models = await client.models.list()
    expect(models.data.map((m) => m.id)).toContain('sim/tiny')
  })

  it("maps the gateway's errors to the SDK's exceptions", async () => {
    const err = await client.chat.completions
      .create({ model: 'sim/tiny', max_tokens: 4, messages: [] }, { headers: { 'x-priority': 'nope' } })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OpenAI.BadRequestError)
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('GW_ERR_UNKNOWN_CLASS')
  })
})
