/**
 * The Responses API end to end against the built-in simulator (which serves it as vLLM
 * does): the official openai client, streamed and not, through the gateway with admission.
 */
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SimGateway, startSimGateway } from '../helpers/sim-gateway.js'

describe('the Responses API through the gateway, in front of the simulator', () => {
  let gw: SimGateway
  let client: OpenAI
  beforeAll(async () => {
    gw = await startSimGateway({ scale: 1, profile: 'tiny' })
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0 })
  })
  afterAll(() => gw.close())

  it('answers responses.create, with its usage, at the output limit', async () => {
    const { data, response } = await client.responses
      .create({ model: 'sim/tiny', input: 'Say hello', max_output_tokens: 6, instructions: 'Be brief.' })
      .withResponse()
    expect(response.headers.get('x-gateway-class')).toBe('interactive')
    expect(data.object).toBe('response')
    expect(data.output_text.length).toBeGreaterThan(0)
    expect(data.usage?.output_tokens).toBeLessThanOrEqual(6)
    // two messages (instructions, input), 9 + 9 characters: ceil(18 / 4) + 2 x 4 tokens
    expect(data.usage?.input_tokens).toBe(13)
  })

  it('streams output-text deltas and ends with response.completed or response.incomplete', async () => {
    const params: OpenAI.Responses.ResponseCreateParamsStreaming & { ignore_eos: boolean } = {
      model: 'sim/tiny',
      input: [{ role: 'user', content: 'Say hello' }],
      max_output_tokens: 5,
      stream: true,
      ignore_eos: true,
    }
    const stream = await client.responses.create(params)
    const types: string[] = []
    let text = ''
    for await (const e of stream) {
      types.push(e.type)
      if (e.type === 'response.output_text.delta') text += e.delta
    }
    expect(types[0]).toBe('response.created')
    expect(types.filter((t) => t === 'response.output_text.delta')).toHaveLength(5)
    expect(types.at(-1)).toBe('response.incomplete') // it stopped at max_output_tokens
    expect(text.length).toBeGreaterThan(0)
  })
})
