import { describe, expect, it } from 'vitest'
import { parseChatRequest, parseCompletionRequest } from '../../../src/sim/openai-parse.js'
import { blockHashes } from '../../../src/sim/prefix-hash.js'
import { chatPromptTokens, completionPromptTokens } from '../../../src/sim/prompt-tokens.js'

describe('prompt-token rule', () => {
  it('chat: ceil(total content chars / 4) + 4 per message', () => {
    expect(chatPromptTokens(0, 1)).toBe(4)
    expect(chatPromptTokens(5, 2)).toBe(2 + 8)
    const r = parseChatRequest({
      messages: [
        { role: 'system', content: 'x'.repeat(10) },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'y'.repeat(7) },
            { type: 'image_url', image_url: { url: 'u' } },
          ],
        },
        { role: 'assistant', content: null },
      ],
    })
    expect(r.ok && r.spec.promptTokens).toBe(Math.ceil(17 / 4) + 12)
  })

  it('completions: ceil(chars / 4), or the number of token ids', () => {
    expect(completionPromptTokens('abcd')).toBe(1)
    expect(completionPromptTokens('abcde')).toBe(2)
    expect(completionPromptTokens('')).toBe(1)
    expect(completionPromptTokens([1, 2, 3])).toBe(3)
    const r = parseCompletionRequest({ prompt: ['z'.repeat(4000)] })
    expect(r.ok && r.spec.promptTokens).toBe(1000)
  })

  it('rejects malformed requests with a parameter name', () => {
    const bad = [
      parseChatRequest({ messages: [] }),
      parseChatRequest({ messages: [{ content: 'no role' }] }),
      parseChatRequest({ messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }),
      parseChatRequest({
        messages: [{ role: 'user', content: 'x' }],
        stream_options: { include_usage: true },
      }),
      parseCompletionRequest({ prompt: ['a', 'b'] }),
      parseCompletionRequest({ prompt: 'a', n: 2 }),
    ]
    for (const r of bad) expect(r.ok).toBe(false)
  })

  it('max_completion_tokens wins over max_tokens for chat', () => {
    const r = parseChatRequest({
      messages: [{ role: 'u', content: 'x' }],
      max_tokens: 9,
      max_completion_tokens: 3,
    })
    expect(r.ok && r.spec.maxTokens).toBe(3)
  })

  it('prefix hashes: equal prefixes give equal hashes, a change breaks the chain after it', () => {
    const a = blockHashes('a'.repeat(64 * 3), 16, 10)
    const b = blockHashes(`${'a'.repeat(64 * 2)}${'b'.repeat(64)}`, 16, 10)
    expect(a).toHaveLength(3)
    expect(b[0]).toBe(a[0])
    expect(b[1]).toBe(a[1])
    expect(b[2]).not.toBe(a[2])
    expect(blockHashes([1, 2, 3, 4], 2, 10)).toHaveLength(2)
  })
})
