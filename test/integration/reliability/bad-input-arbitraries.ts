/**
 * fast-check generators of what a careless, hostile or broken client sends: random JSON,
 * OpenAI-looking bodies whose fields have the wrong types or absurd values, deep nesting,
 * huge strings, bytes that are not UTF-8, and odd headers. `seedOf` fixes the run's seed
 * (FC_SEED overrides it), so a failure reproduces from the seed fast-check prints.
 */
import fc from 'fast-check'

/** The seed of every property in a run: FC_SEED, else a fixed one (CI is reproducible). */
export function seedOf(name: string): number {
  const fromEnv = process.env.FC_SEED
  if (fromEnv !== undefined && fromEnv !== '') return Number(fromEnv)
  let h = 22
  for (const ch of name) h = (h * 31 + ch.charCodeAt(0)) | 0
  return h
}

/** Settings for fc.assert: the seed, the number of runs, and the seed printed on failure. */
export function runs(name: string, numRuns: number): fc.Parameters<unknown> {
  const seed = seedOf(name)
  return {
    seed,
    numRuns,
    endOnFailure: true,
    reporter: (details) => {
      if (!details.failed) return
      throw new Error(
        `${name}: failed with seed ${details.seed} (FC_SEED=${details.seed}), path ${details.counterexamplePath}:\n` +
          `${fc.stringify(details.counterexample).slice(0, 2000)}\n${details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)}`,
      )
    },
  }
}

export const JSON_ROUTES = [
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/responses',
  '/v1/embeddings',
] as const

/** Any JSON value a client could send, scalars to nested objects. */
export const anyJson = fc.jsonValue({ maxDepth: 4 })

/** A string that is big: long runs of one character, quotes and escapes, or unicode. */
export const bigString = fc.oneof(
  fc.integer({ min: 1_000, max: 100_000 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 100, max: 10_000 }).map((n) => '"\\\u0000\u2028'.repeat(n)),
  fc.integer({ min: 100, max: 10_000 }).map((n) => '😀\uD800'.repeat(n)),
)

/** Numbers a token count must not be: negative, zero, fractional, huge, or not numbers. */
export const badCount = fc.oneof(
  fc.integer({ min: -1_000_000, max: 0 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
  fc.constantFrom(1e300, -1e300, 2 ** 53, 2 ** 31, Number.MAX_SAFE_INTEGER, 1e21, -0),
  fc.string({ maxLength: 12 }),
  fc.constantFrom(null, true, false, [], {}, [5], '100'),
)

/** A field's value of the wrong type (or a right one), for any field the gateway reads. */
const anyField = fc.oneof(
  { arbitrary: anyJson, weight: 8 },
  { arbitrary: bigString, weight: 1 },
  { arbitrary: badCount, weight: 3 },
)

const message = fc.oneof(
  fc.record(
    {
      role: fc.oneof(fc.constantFrom('user', 'system', 'assistant', 'tool', 'developer'), anyField),
      content: fc.oneof(
        fc.string({ maxLength: 50 }),
        bigString,
        fc.array(
          fc.record({ type: fc.constantFrom('text', 'image_url'), text: anyField }, { requiredKeys: [] }),
        ),
        anyJson,
      ),
    },
    { requiredKeys: [] },
  ),
  anyJson,
)

/** An OpenAI-looking body: the fields the gateway reads, each of any type or value. */
export const openaiBody = fc.record(
  {
    model: fc.oneof(fc.constantFrom('m', 'm-alias', 'nope', '', '*'), anyField),
    messages: fc.oneof(fc.array(message, { maxLength: 5 }), anyField),
    prompt: anyField,
    input: fc.oneof(fc.array(message, { maxLength: 3 }), anyField),
    instructions: anyField,
    max_tokens: fc.oneof(fc.integer({ min: 1, max: 64 }), badCount),
    max_completion_tokens: badCount,
    max_output_tokens: badCount,
    n: fc.oneof(fc.integer({ min: -5, max: 200 }), badCount),
    stream: fc.oneof(fc.boolean(), anyField),
    stream_options: fc.oneof(fc.record({ include_usage: anyField }, { requiredKeys: [] }), anyField),
    service_tier: fc.oneof(fc.constantFrom('flex', 'default', 'auto', 'priority'), anyField),
    reasoning_effort: anyField,
    reasoning: anyField,
    ['__proto__']: anyJson,
    constructor: anyJson,
  },
  { requiredKeys: [] },
)

/** A JSON text nested `depth` deep (arrays or objects), inside an otherwise valid body. */
export const deepBody = fc
  .record({ depth: fc.integer({ min: 100, max: 20_000 }), objects: fc.boolean(), where: fc.nat(2) })
  .map(({ depth, objects, where }) => {
    const open = objects ? '{"a":'.repeat(depth) : '['.repeat(depth)
    const close = objects ? '}'.repeat(depth) : ']'.repeat(depth)
    const deep = `${open}1${close}`
    if (where === 0) return `{"model":"m","messages":[{"role":"user","content":${deep}}]}`
    if (where === 1) return `{"model":"m","prompt":${deep},"max_tokens":3}`
    return `{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":${deep}}`
  })

/** Bytes that are not valid UTF-8 (lone continuation bytes, overlongs, surrogates), in JSON strings or bare. */
export const invalidUtf8 = fc
  .record({
    bad: fc.array(
      fc.constantFrom(
        [0xff],
        [0xc0, 0xaf],
        [0xed, 0xa0, 0x80],
        [0x80],
        [0xf8, 0x88, 0x80, 0x80, 0x80],
        [0xe2, 0x82],
      ),
      { minLength: 1, maxLength: 20 },
    ),
    inString: fc.boolean(),
  })
  .map(({ bad, inString }) => {
    const raw = Buffer.from(bad.flat())
    if (!inString) return Buffer.concat([Buffer.from('{"model":"m",'), raw, Buffer.from('}')])
    return Buffer.concat([
      Buffer.from('{"model":"m","messages":[{"role":"user","content":"'),
      raw,
      Buffer.from('"}],"max_tokens":2}'),
    ])
  })

/** Text that is not JSON or is broken JSON. */
export const brokenJson = fc.oneof(
  fc.string({ maxLength: 200 }),
  anyJson.map((v) => {
    const s = JSON.stringify(v) ?? 'null'
    return s.slice(0, Math.max(0, s.length - 1))
  }),
  fc.constantFrom(
    '{',
    '{"model":',
    '{"a":1}{"b":2}',
    '\u0000',
    '{"model":"m"',
    'NaN',
    '{"a":1e999999}',
    '[]]',
  ),
)

/** Content types a client might send with a JSON (or not) body. */
export const contentType = fc.oneof(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=latin1',
    'application/JSON',
    'application/json, text/plain',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/octet-stream',
    '',
    ';;;',
  ),
  fc.string({ maxLength: 40 }),
)

/** Header values as clients mangle them: empty, long, odd characters, lists. */
export const headerValue = fc.oneof(
  fc.string({ maxLength: 30 }).map((s) => s.replace(/[^\t\x20-\x7e]/g, '')),
  fc.constantFrom(
    'interactive',
    'batch',
    'INTERACTIVE',
    'interactive, batch',
    'premium',
    '',
    ' ',
    'true',
    'false',
  ),
  fc.integer({ min: 100, max: 8_000 }).map((n) => 'a'.repeat(n)),
)
