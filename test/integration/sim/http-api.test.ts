import OpenAI from 'openai'
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SimHandle, startSim } from '../../../src/sim/index.js'
import { postJson, postStream } from './helpers.js'

let sim: SimHandle
let base: string

beforeAll(async () => {
  sim = await startSim({ profile: 'tiny', port: 0, replicas: 2, seed: 3 })
  base = sim.replicas[0]?.url ?? ''
})
afterAll(() => sim.close())

const chat = (extra: Record<string, unknown> = {}) => ({
  model: 'sim/tiny',
  messages: [
    { role: 'system', content: 'x'.repeat(40) },
    { role: 'user', content: 'y'.repeat(21) },
  ],
  ...extra,
})
function firstChoice(chunk: Record<string, unknown> | undefined): Record<string, unknown> {
  const choices = (chunk?.choices ?? []) as Record<string, unknown>[]
  return choices[0] ?? {}
}

// ceil(61 / 4) + 2 * 4
const CHAT_PROMPT_TOKENS = 24

describe('simulator HTTP API', () => {
  it('runs replicas on their own ephemeral ports', () => {
    expect(sim.replicas).toHaveLength(2)
    expect(sim.replicas[0]?.port).not.toBe(sim.replicas[1]?.port)
    expect(sim.replicas[1]?.url).toBe(`http://127.0.0.1:${sim.replicas[1]?.port}`)
    expect(sim.replicas.map((r) => r.name)).toEqual(['sim-0', 'sim-1'])
    expect(sim.modelName).toBe('sim/tiny')
  })

  it('streams chat chunks in vLLM shape: role with the first token, finish on the last, usage, [DONE]', async () => {
    const r = await postStream(
      `${base}/v1/chat/completions`,
      chat({
        stream: true,
        max_tokens: 6,
        ignore_eos: true,
        stream_options: { include_usage: true },
      }),
    )
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    expect(r.events.at(-1)?.data).toBe('[DONE]')
    expect(r.raw.endsWith('data: [DONE]\n\n')).toBe(true)
    const content = r.chunks.slice(0, -1)
    expect(content).toHaveLength(6) // one chunk per token (one per step)
    const ids = new Set(r.chunks.map((c) => c.id))
    expect(ids.size).toBe(1)
    expect(String(r.chunks[0]?.id)).toMatch(/^chatcmpl-[0-9a-f]{32}$/)
    for (const c of r.chunks) {
      expect(c.object).toBe('chat.completion.chunk')
      expect(c.model).toBe('sim/tiny')
      expect(typeof c.created).toBe('number')
    }
    const choice = (i: number) => firstChoice(content[i])
    expect(choice(0).delta).toEqual({ role: 'assistant', content: 'The' })
    expect(choice(0).finish_reason).toBeNull()
    expect(choice(1).delta).toEqual({ content: ' quick' })
    expect(choice(5).finish_reason).toBe('length')
    const usage = r.chunks.at(-1) as Record<string, unknown>
    expect(usage.choices).toEqual([])
    expect(usage.usage).toEqual({
      prompt_tokens: CHAT_PROMPT_TOKENS,
      completion_tokens: 6,
      total_tokens: CHAT_PROMPT_TOKENS + 6,
    })
  })

  it('sends no usage chunk unless stream_options.include_usage is true', async () => {
    const r = await postStream(
      `${base}/v1/chat/completions`,
      chat({ stream: true, max_tokens: 3, ignore_eos: true }),
    )
    expect(r.chunks).toHaveLength(3)
    expect(r.chunks.every((c) => (c.choices as unknown[]).length === 1 && c.usage === undefined)).toBe(true)
  })

  it('answers non-streamed chat and completions with usage and exact prompt-token counts', async () => {
    const c = await postJson(
      `${base}/v1/chat/completions`,
      chat({ max_completion_tokens: 4, ignore_eos: true }),
    )
    expect(c.status).toBe(200)
    expect(c.json.object).toBe('chat.completion')
    const msg = ((c.json.choices as Record<string, unknown>[])[0] as Record<string, unknown>)
      .message as Record<string, unknown>
    expect(msg.role).toBe('assistant')
    expect(msg.content).toBe('The quick brown fox')
    expect(c.json.usage).toMatchObject({
      prompt_tokens: CHAT_PROMPT_TOKENS,
      completion_tokens: 4,
      total_tokens: 28,
    })

    const t = await postJson(`${base}/v1/completions`, {
      prompt: [1, 2, 3, 4, 5, 6, 7],
      max_tokens: 2,
      ignore_eos: true,
    })
    expect(t.json.object).toBe('text_completion')
    expect(t.json.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 2 })
    const s = await postStream(`${base}/v1/completions`, {
      prompt: 'abcdefghi',
      max_tokens: 2,
      ignore_eos: true,
      stream: true,
    })
    const first = firstChoice(s.chunks[0])
    expect(s.chunks[0]?.object).toBe('text_completion')
    expect(first).toEqual({ index: 0, text: 'The', logprobs: null, finish_reason: null, stop_reason: null })
  })

  it('without ignore_eos draws the length from the profile and stops with "stop" below max_tokens', async () => {
    const lengths: number[] = []
    for (let i = 0; i < 8; i++) {
      const r = await postJson(`${base}/v1/completions`, { prompt: 'hi', max_tokens: 1000 })
      const choice = (r.json.choices as Record<string, unknown>[])[0] as Record<string, unknown>
      expect(choice.finish_reason).toBe('stop')
      lengths.push((r.json.usage as Record<string, number>).completion_tokens as number)
    }
    expect(new Set(lengths).size).toBeGreaterThan(1)
    const capped = await postJson(`${base}/v1/completions`, { prompt: 'hi', max_tokens: 1 })
    expect(
      ((capped.json.choices as Record<string, unknown>[])[0] as Record<string, unknown>).finish_reason,
    ).toBe('length')
  })

  it("answers a prompt over max_model_len with vLLM's 400 body", async () => {
    const r = await postJson(`${base}/v1/completions`, { prompt: 'z'.repeat(4 * 3000) })
    expect(r.status).toBe(400)
    expect(r.json).toEqual({
      error: {
        message:
          "This model's maximum context length is 2048 tokens. However, your request has 3000 input tokens. Please reduce the length of the input messages.",
        type: 'BadRequestError',
        param: null,
        code: 400,
      },
    })
    const tooMany = await postJson(`${base}/v1/completions`, { prompt: 'z'.repeat(4000), max_tokens: 1500 })
    expect(tooMany.status).toBe(400)
    expect((tooMany.json.error as Record<string, unknown>).message).toContain(
      "'max_tokens' or 'max_completion_tokens' is too large: 1500",
    )
  })

  it('rejects bad input with 400 and unknown models with 404', async () => {
    const bad = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: '{not json' })
    expect(bad.status).toBe(400)
    const noMsg = await postJson(`${base}/v1/chat/completions`, { messages: 'hi' })
    expect(noMsg.status).toBe(400)
    expect((noMsg.json.error as Record<string, unknown>).param).toBe('messages')
    const model = await postJson(`${base}/v1/chat/completions`, chat({ model: 'gpt-4' }))
    expect(model.status).toBe(404)
    expect((model.json.error as Record<string, unknown>).type).toBe('NotFoundError')
    expect((await fetch(`${base}/nope`)).status).toBe(404)
    expect((await fetch(`${base}/v1/completions`)).status).toBe(405)
  })

  it('serves /v1/models, /health and /metrics', async () => {
    const models = (await (await fetch(`${base}/v1/models`)).json()) as Record<string, unknown>
    expect(models.object).toBe('list')
    expect((models.data as Record<string, unknown>[])[0]).toMatchObject({
      id: 'sim/tiny',
      object: 'model',
      owned_by: 'vllm',
      max_model_len: 2048,
    })
    const health = await fetch(`${base}/health`)
    expect(health.status).toBe(200)
    const metrics = await fetch(`${base}/metrics`)
    expect(metrics.headers.get('content-type')).toContain('text/plain; version=0.0.4')
    expect(await metrics.text()).toContain('vllm:num_requests_running{model_name="sim/tiny",engine="0"}')
  })

  it('works with the official openai client, streaming', async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 })
    // ignore_eos is a vLLM extension the OpenAI types do not know; a typed variable carries it
    const params: ChatCompletionCreateParamsStreaming & { ignore_eos: boolean } = {
      model: 'sim/tiny',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
      ignore_eos: true,
    }
    const stream = await client.chat.completions.create(params)
    let text = ''
    let usage: unknown
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? ''
      if (chunk.usage) usage = chunk.usage
    }
    expect(text).toBe('The quick brown fox jumps')
    expect(usage).toMatchObject({ completion_tokens: 5, prompt_tokens: 6 })
  })
})
