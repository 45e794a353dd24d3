import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { upstreamBody } from '../../../src/openai/body-bytes.js'
import { checkBody } from '../../../src/openai/body-checks.js'
import { type LazyLimits, parseJsonBody } from '../../../src/openai/json-body.js'
import { LazyText } from '../../../src/openai/lazy-text.js'
import { blockGeometry, promptBlocks } from '../../../src/openai/prompt-blocks.js'
import { type JsonBody, promptSize } from '../../../src/openai/request-fields.js'
import { runs } from '../../integration/reliability/bad-input-arbitraries.js'

/** Every string of 8 bytes or more cut out, whatever the body's size (the defaults: 16 KB, 2 KB). */
const LAZY: LazyLimits = { bodyBytes: 0, stringBytes: 8 }
const EAGER: LazyLimits = { bodyBytes: Number.POSITIVE_INFINITY, stringBytes: Number.POSITIVE_INFINITY }

function outcome(raw: Buffer, limits: LazyLimits): { value: unknown } | { code: string | undefined } {
  try {
    return { value: parseJsonBody(raw, limits).value }
  } catch (err) {
    return { code: (err as { code?: string }).code }
  }
}

/** The value at a path in a parsed body. */
const at = (v: unknown, ...path: (string | number)[]): unknown =>
  path.reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], v)

/** The prompt's blocks' hashes in one cut. */
function hashes(body: JsonBody, size: { chars: number; messages: number }): number[] | undefined {
  const b = promptBlocks(body, blockGeometry(4, 2.5), size.chars, size.messages)
  return b === undefined ? undefined : [...b.hashes.subarray(0, b.count)]
}

/** Text of every kind: ASCII, escapes (quotes, backslashes, control characters), accents, emoji, lone surrogates. */
const text = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('line one\nline "two"\t\\ end', 'café – naïve 😀 ok', '\u0001\u001f\ud800 x', 'a/b\\/c'),
)
const part = fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  fc.record({ type: fc.constant('image_url'), image_url: fc.record({ url: text }) }),
)
const message = fc.record({
  role: fc.constantFrom('system', 'user', 'assistant'),
  content: fc.oneof(text, fc.array(part, { maxLength: 3 })),
})
const body = fc.oneof(
  fc.record({ model: text, messages: fc.array(message, { maxLength: 4 }), max_tokens: fc.nat() }),
  fc.record({ prompt: fc.oneof(text, fc.array(text, { maxLength: 2 })), user: text }),
  fc.record({
    instructions: text,
    input: fc.oneof(text, fc.array(fc.oneof(text, message), { maxLength: 3 })),
  }),
  fc.dictionary(fc.string(), fc.jsonValue()),
)

describe('large bodies: long prompt strings left in bytes', () => {
  it('reads the same prompt as a full parse: the same value, size and blocks, for any body', () => {
    fc.assert(
      fc.property(body, fc.boolean(), (b, pretty) => {
        const raw = Buffer.from(pretty ? JSON.stringify(b, null, 2) : JSON.stringify(b))
        const lazy = outcome(raw, LAZY)
        const eager = outcome(raw, EAGER)
        if (!('value' in eager)) {
          expect(lazy).toEqual(eager) // refused the same way (prototype poisoning)
          return
        }
        if (!('value' in lazy)) throw new Error(`refused only when cut: ${JSON.stringify(lazy)}`)
        expect(JSON.stringify(lazy.value)).toBe(JSON.stringify(eager.value))
        const [l, e] = [lazy.value as JsonBody, eager.value as JsonBody]
        expect(checkBody(l)).toEqual(checkBody(e))
        const size = promptSize(e)
        expect(promptSize(l)).toEqual(size)
        expect(hashes(l, size)).toEqual(hashes(e, size))
      }),
      runs('lazy body equivalence', 1000),
    )
  })

  it('refuses the same bodies as a full parse: control characters, bad escapes, broken structure', () => {
    const long = 'a long enough prompt, "quoted", with \\n escapes and é: '.repeat(3)
    const valid = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: long }] })
    const bytes = Buffer.from(valid)
    // every single-byte change of a valid body, at a sample of positions and values
    fc.assert(
      fc.property(fc.nat(bytes.length - 1), fc.integer({ min: 0, max: 255 }), (at, v) => {
        const raw = Buffer.from(bytes)
        raw[at] = v
        const eager = outcome(raw, EAGER)
        const lazy = outcome(raw, LAZY)
        if ('code' in eager) expect(lazy).toEqual(eager)
        else expect(JSON.stringify((lazy as { value: unknown }).value)).toBe(JSON.stringify(eager.value))
      }),
      runs('lazy body refusals', 2000),
    )
    for (const bad of ['\u0001', '\\x', '\\u12', '\\u12g4', '\\']) {
      const raw = Buffer.from(
        `{"messages":[{"role":"user","content":"${'p'.repeat(20)}${bad}${'q'.repeat(20)}"}]}`,
      )
      expect(outcome(raw, LAZY)).toEqual({ code: 'GW_ERR_INVALID_JSON' })
      expect(outcome(raw, EAGER)).toEqual({ code: 'GW_ERR_INVALID_JSON' })
    }
  })

  it('leaves prompt text in bytes only where admission reads prompts; everything else is a string', () => {
    const long = 'x'.repeat(3000)
    const raw = Buffer.from(
      JSON.stringify({
        model: long,
        messages: [
          { role: 'system', content: long },
          { role: 'user', content: [{ type: 'text', text: long }] },
        ],
        tools: [{ type: 'function', function: { name: 'f', description: long } }],
        [long]: 1,
        max_tokens: 5,
      }).padEnd(20_000, ' '),
    )
    const b = parseJsonBody(raw).value // the shipped limits
    expect(at(b, 'messages', 0, 'content')).toBeInstanceOf(LazyText)
    expect(at(b, 'messages', 1, 'content', 0, 'text')).toBeInstanceOf(LazyText)
    expect(at(b, 'messages', 0, 'content', 'length')).toBe(3000)
    expect(at(b, 'model')).toBe(long)
    expect(at(b, 'tools', 0, 'function', 'description')).toBe(long)
    expect(at(b, long)).toBe(1)
    // a smaller body, or one that is not UTF-8, is parsed whole
    const small = parseJsonBody(Buffer.from(JSON.stringify({ messages: [{ role: 'user', content: long }] })))
    expect(typeof at(small.value, 'messages', 0, 'content')).toBe('string')
    const notUtf8 = Buffer.concat([raw.subarray(0, raw.length - 1), Buffer.from([0xff])])
    expect(() => parseJsonBody(notUtf8)).toThrow() // a stray byte after the object: invalid either way
    const latin = Buffer.from(
      `{"messages":[{"role":"user","content":"${long}\xe9"}]}`.padEnd(20_000),
      'latin1',
    )
    expect(typeof at(parseJsonBody(latin).value, 'messages', 0, 'content')).toBe('string')
  })

  it('sends the upstream the same bytes as a full parse would, edited or not', () => {
    fc.assert(
      fc.property(body, fc.nat(1000), fc.boolean(), (b, maxTokens, drop) => {
        const raw = Buffer.from(JSON.stringify(b))
        const lazy = outcome(raw, LAZY)
        const eager = outcome(raw, EAGER)
        if (!('value' in lazy) || !('value' in eager)) return
        const send = (v: unknown) => {
          const body = v as JsonBody
          const original = { ...body }
          body.max_tokens = maxTokens
          if (drop) delete body.model // encoded whole: LazyText encodes as its string
          return upstreamBody(raw, original, body).toString()
        }
        expect(send(lazy.value)).toBe(send(eager.value))
      }),
      runs('lazy body upstream bytes', 500),
    )
  })
})
