import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { topLevelMembers, upstreamBody } from '../../../src/openai/body-bytes.js'
import { parseJsonBody } from '../../../src/openai/json-body.js'
import type { JsonBody } from '../../../src/openai/request-fields.js'
import { runs } from '../../integration/reliability/bad-input-arbitraries.js'

/** As the gateway does it: parse the bytes, copy the top level, let `edit` rewrite it, encode. */
function roundTrip(
  text: string | Buffer,
  edit: (b: JsonBody) => void,
): { out: Buffer; body: JsonBody; raw: Buffer } {
  const raw = typeof text === 'string' ? Buffer.from(text) : text
  const body = parseJsonBody(raw).value as JsonBody
  const original = { ...body }
  edit(body)
  return { out: upstreamBody(raw, original, body), body, raw }
}

const PROMPT = 'a "quoted" \\ prompt, with {braces} and [brackets] and "max_tokens": 9 inside é'

describe('upstream body bytes', () => {
  it('sends the received bytes themselves when no stage changed the body', () => {
    const { out, raw } = roundTrip(
      `{ "model" : "m", "messages": [{"role":"user","content":${JSON.stringify(PROMPT)}}] }`,
      () => {},
    )
    expect(out).toBe(raw)
  })

  it('splices changed and added fields into the received bytes, the prompt bytes untouched', () => {
    const text = `{"model":"alias","messages":[{"role":"user","content":${JSON.stringify(PROMPT)}}],"max_tokens":500,"stream":true,"stream_options":{"x":1}}`
    const { out, body } = roundTrip(text, (b) => {
      b.model = 'served'
      b.max_tokens = 64
      b.stream_options = { ...(b.stream_options as object), include_usage: true }
      b.n = 1
    })
    expect(JSON.parse(out.toString())).toEqual(body)
    expect(out.toString()).toBe(
      `{"model":"served","messages":[{"role":"user","content":${JSON.stringify(PROMPT)}}],"max_tokens":64,"stream":true,"stream_options":{"x":1,"include_usage":true},"n":1}`,
    )
  })

  it('replaces every occurrence of a duplicated key (JSON.parse kept the last) and finds escaped keys', () => {
    const { out, body } = roundTrip('{"max_tokens":1,"m\\u0061x_tokens":2, "x": {"max_tokens": 3}}', (b) => {
      b.max_tokens = 7
    })
    expect(out.toString()).toBe('{"max_tokens":7,"m\\u0061x_tokens":7, "x": {"max_tokens": 3}}')
    expect(JSON.parse(out.toString())).toEqual(body)
  })

  it('adds a field to an empty object without a stray comma', () => {
    expect(roundTrip(' {} ', (b) => (b.stream_options = { include_usage: true })).out.toString()).toBe(
      ' {"stream_options":{"include_usage":true}} ',
    )
  })

  it('encodes the body whole when the bytes are not UTF-8, start with a BOM, or a key was deleted', () => {
    const bad = Buffer.concat([Buffer.from('{"model":"m","x":"'), Buffer.from([0xff]), Buffer.from('"}')])
    expect(roundTrip(bad, () => {}).out.toString()).toBe('{"model":"m","x":"\uFFFD"}')
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"model":"m"}')])
    expect(roundTrip(bom, () => {}).out.toString()).toBe('{"model":"m"}')
    expect(roundTrip('{"a":1,"b":2}', (b) => delete b.a).out.toString()).toBe('{"b":2}')
  })

  it('gives the upstream what the stages made of the body, for any JSON object and any top-level edits', () => {
    const key = fc.oneof(
      fc.constantFrom('model', 'max_tokens', 'stream_options', 'n', 'a"b', 'é', '\\'),
      fc.string(),
    )
    fc.assert(
      fc.property(
        fc.dictionary(key, fc.jsonValue()),
        fc.array(fc.tuple(key, fc.jsonValue()), { maxLength: 4 }),
        fc.boolean(),
        (obj, edits, pretty) => {
          const text = pretty ? JSON.stringify(obj, null, 2) : JSON.stringify(obj)
          try {
            parseJsonBody(Buffer.from(text))
          } catch {
            return // refused (prototype poisoning): never forwarded
          }
          const { out, body } = roundTrip(text, (b) => {
            for (const [k, v] of edits) if (k !== '__proto__') b[k] = v
          })
          // what any JSON encoder makes of the edited body (-0 is sent as 0)
          expect(JSON.parse(out.toString())).toEqual(JSON.parse(JSON.stringify(body)))
        },
      ),
      runs('body-bytes edits', 500),
    )
  })

  it('lists the top-level members with their value spans', () => {
    const b = Buffer.from('{"a": [1, {"b": "}"}] , "c":"x\\"y", "d" :null}')
    const scan = topLevelMembers(b)
    expect(scan?.members.map((m) => [m.key, b.toString('utf8', m.from, m.to)])).toEqual([
      ['a', '[1, {"b": "}"}]'],
      ['c', '"x\\"y"'],
      ['d', 'null'],
    ])
    expect(topLevelMembers(Buffer.from('[1]'))).toBeUndefined()
  })
})

describe('JSON body parser', () => {
  it('refuses what fastify refused: empty, not JSON, prototype poisoning', () => {
    const code = (s: string) => {
      try {
        parseJsonBody(Buffer.from(s))
        return 'parsed'
      } catch (err) {
        return (err as { code?: string }).code
      }
    }
    expect(code('')).toBe('GW_ERR_EMPTY_BODY')
    expect(code('{"a":')).toBe('GW_ERR_INVALID_JSON')
    expect(code('{"a":[{"__proto__":{"x":1}}]}')).toBe('GW_ERR_INVALID_JSON')
    expect(code('{"a":{"\\u005f_proto__":1}}')).toBe('GW_ERR_INVALID_JSON')
    expect(code('{"constructor":{"prototype":{"x":1}}}')).toBe('GW_ERR_INVALID_JSON')
    expect(code('{"constructor":"fine","proto":1,"messages":[{"content":"__proto__"}]}')).toBe('parsed')
  })
})
