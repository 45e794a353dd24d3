import { describe, expect, it } from 'vitest'
import { JsonObserver } from '../../../src/openai/json-observer.js'
import type { Ticket } from '../../../src/ticket.js'

type Outcome = Pick<Ticket, 'usage' | 'finishReason'>

/** What the observer reads from `text`, relayed in chunks of `chunk` bytes. */
function observe(text: string, chunk = Number.POSITIVE_INFINITY): Outcome {
  const o = new JsonObserver()
  const bytes = Buffer.from(text)
  for (let i = 0; i < bytes.length; i += chunk) o.push(bytes.subarray(i, Math.min(bytes.length, i + chunk)))
  const out: Outcome = { usage: undefined, finishReason: undefined }
  o.finish(out)
  return out
}

/** The reading by the definition, written apart: top-level usage, choices[0]'s finish reason. */
function byParse(text: string): Outcome {
  const out: Outcome = { usage: undefined, finishReason: undefined }
  let body: Record<string, unknown>
  try {
    body = JSON.parse(text)
  } catch {
    return out
  }
  const u = body.usage as Record<string, unknown> | null | undefined
  if (u !== null && typeof u === 'object' && typeof u.prompt_tokens === 'number') {
    out.usage = {
      promptTokens: u.prompt_tokens,
      completionTokens: typeof u.completion_tokens === 'number' ? u.completion_tokens : 0,
    }
  }
  const first = Array.isArray(body.choices) ? (body.choices[0] as Record<string, unknown>) : undefined
  if (first !== null && typeof first === 'object' && typeof first.finish_reason === 'string')
    out.finishReason = first.finish_reason
  return out
}

const VLLM_CHAT = JSON.stringify({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Hello', tool_calls: [] },
      logprobs: null,
      finish_reason: 'stop',
      stop_reason: null,
    },
  ],
  usage: { prompt_tokens: 12, total_tokens: 19, completion_tokens: 7, prompt_tokens_details: null },
  prompt_logprobs: null,
  kv_transfer_params: null,
})

describe('JsonObserver', () => {
  it("reads a vLLM chat completion's usage and finish reason, whole or in chunks", () => {
    const want = { usage: { promptTokens: 12, completionTokens: 7 }, finishReason: 'stop' }
    expect(observe(VLLM_CHAT)).toEqual(want)
    expect(observe(VLLM_CHAT, 7)).toEqual(want)
    expect(observe(JSON.stringify(JSON.parse(VLLM_CHAT), null, 2))).toEqual(want)
  })

  it('is not misled by the keys written inside the answer text', () => {
    const text = JSON.stringify({
      choices: [
        {
          message: { content: 'a,"usage":{"prompt_tokens":999},"finish_reason":"evil" \\' },
          finish_reason: 'length',
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 4 },
      note: '"usage": {"prompt_tokens": 5}',
    })
    expect(observe(text)).toEqual({ usage: { promptTokens: 3, completionTokens: 4 }, finishReason: 'length' })
  })

  it('reads the top-level usage when a nested one comes after it', () => {
    const text = JSON.stringify({
      usage: { prompt_tokens: 3, completion_tokens: 4 },
      choices: [{ text: 'x', finish_reason: 'stop' }],
      extra: { usage: { prompt_tokens: 100, completion_tokens: 1 } },
    })
    expect(observe(text)).toEqual({ usage: { promptTokens: 3, completionTokens: 4 }, finishReason: 'stop' })
  })

  it('reads the last of duplicate keys, as JSON.parse does, and escaped key names', () => {
    const text =
      '{"usage":{"prompt_tokens":1,"completion_tokens":1},"choices":[{"finish_reason":"stop","finish_reason":"length"}],' +
      '"\\u0075sage":{"prompt_tokens":2,"completion_tokens":3}}'
    expect(observe(text)).toEqual(byParse(text))
    expect(observe(text)).toEqual({ usage: { promptTokens: 2, completionTokens: 3 }, finishReason: 'length' })
  })

  it('reads a Responses API answer, usage null, and nothing from a body that is not JSON', () => {
    const responses = JSON.stringify({
      id: 'resp_1',
      object: 'response',
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      usage: { input_tokens: 9, output_tokens: 16, total_tokens: 25 },
    })
    expect(observe(responses)).toEqual({
      usage: { promptTokens: 9, completionTokens: 16 },
      finishReason: 'length',
    })
    expect(observe('{"choices":[{"finish_reason":"stop"}],"usage":null}')).toEqual({
      usage: undefined,
      finishReason: 'stop',
    })
    expect(observe('{"choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":1')).toEqual({
      usage: undefined,
      finishReason: undefined,
    })
    expect(observe('<html>502</html>')).toEqual({ usage: undefined, finishReason: undefined })
  })

  it('agrees with a full parse on random answers (key order, nesting, escapes, whitespace)', () => {
    let seed = 7
    const rand = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      return seed / 2 ** 32
    }
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!
    const pieces = [
      'a',
      ' ',
      '"',
      '\\',
      '{',
      '}',
      '[',
      ']',
      ',',
      ':',
      'usage',
      'finish_reason',
      '\n',
      'é',
      '😀',
    ]
    const str = () => Array.from({ length: Math.floor(rand() * 12) }, () => pick(pieces)).join('')
    const value = (depth: number): unknown => {
      const r = rand()
      if (depth > 2 || r < 0.3) return pick([str(), 1, null, true])
      if (r < 0.5) return Array.from({ length: Math.floor(rand() * 3) }, () => value(depth + 1))
      const o: Record<string, unknown> = {}
      for (let k = Math.floor(rand() * 4); k > 0; k--)
        o[pick(['usage', 'finish_reason', 'x', str()])] = value(depth + 1)
      return o
    }
    for (let n = 0; n < 2000; n++) {
      const top: [string, unknown][] = [
        ['id', str()],
        [
          'choices',
          Array.from({ length: Math.floor(rand() * 3) }, () => ({
            message: { content: str(), extra: value(1) },
            ...(rand() < 0.8 ? { finish_reason: pick(['stop', 'length', str(), null]) } : {}),
          })),
        ],
        [
          'usage',
          rand() < 0.8 ? { prompt_tokens: n, completion_tokens: n + 1, details: value(2) } : value(1),
        ],
        ['extra', value(0)],
      ]
      top.sort(() => rand() - 0.5)
      const text = JSON.stringify(Object.fromEntries(top), null, rand() < 0.3 ? 1 : undefined)
      expect(observe(text, 1 + Math.floor(rand() * 64)), text).toEqual(byParse(text))
    }
  })
})
