import { describe, expect, it } from 'vitest'
import { blockGeometry, promptBlocks } from '../../../src/openai/prompt-blocks.js'
import { promptSize } from '../../../src/openai/request-fields.js'

const g = blockGeometry(16, 4) // 64 characters a block, 16 a message header

function blocksOf(body: Record<string, unknown>) {
  const size = promptSize(body)
  const b = promptBlocks(body, g, size.chars, size.messages)
  if (b === undefined) throw new Error('no blocks')
  return b
}

/** Deterministic text without repeats (a repeated block must not look like a shared prefix). */
function text(n: number, seed = 1): string {
  let s = ''
  let x = seed
  while (s.length < n) {
    x = (x * 1103515245 + 12345) % 2 ** 31
    s += x.toString(36)
  }
  return s.slice(0, n)
}

const hashesOf = (b: ReturnType<typeof blocksOf>) => Array.from(b.hashes.subarray(0, b.count))

describe('prompt blocks', () => {
  it('cuts in the engine block size, in characters as the token estimate counts them', () => {
    const body = { messages: [{ role: 'user', content: text(6400) }] }
    const b = blocksOf(body)
    // 16 header units + 6400 content characters = 6416 units, 64 to a block: 100 full blocks
    expect(b.totalUnits).toBe(6416)
    expect(b.count).toBe(100)
    expect(b.unitsPerBlock).toBe(64)
    expect(b.geometry).toBe('16x4')
    // the estimate of the same prompt (4 chars a token + 4 a message) is 1604 tokens = 100.25 blocks
  })

  it('gives the same hashes to the same prefix, and one block hash covers everything before it', () => {
    const system = { role: 'system', content: text(2000, 7) }
    const turn1 = { messages: [system, { role: 'user', content: text(500, 8) }] }
    const turn2 = {
      messages: [
        system,
        { role: 'user', content: text(500, 8) },
        { role: 'assistant', content: text(900, 9) },
        { role: 'user', content: text(300, 10) },
      ],
    }
    const a = hashesOf(blocksOf(turn1))
    const b = hashesOf(blocksOf(turn2))
    expect(b.length).toBeGreaterThan(a.length)
    expect(b.slice(0, a.length)).toEqual(a) // every full block of turn 1 is a prefix of turn 2
    // deterministic, and all distinct
    expect(hashesOf(blocksOf(turn2))).toEqual(b)
    expect(new Set(b).size).toBe(b.length)
    for (const h of b) expect(Number.isSafeInteger(h)).toBe(true)
  })

  it('a change mid-prompt changes every later block and none before it', () => {
    const content = text(8000, 3)
    const at = 4000
    const changed = `${content.slice(0, at)}#${content.slice(at + 1)}`
    const a = hashesOf(blocksOf({ messages: [{ role: 'user', content }] }))
    const b = hashesOf(blocksOf({ messages: [{ role: 'user', content: changed }] }))
    expect(b.length).toBe(a.length)
    // the changed character is unit 16 + 4000: in block 62 (units 3968..4031)
    const first = Math.floor((16 + at) / 64)
    for (let i = 0; i < a.length; i++) {
      if (i < first) expect(b[i]).toBe(a[i])
      else expect(b[i]).not.toBe(a[i])
    }
  })

  it('roles, message boundaries and tool definitions are part of the prefix', () => {
    const c = text(3000, 4)
    const user = hashesOf(blocksOf({ messages: [{ role: 'user', content: c }] }))
    const system = hashesOf(blocksOf({ messages: [{ role: 'system', content: c }] }))
    expect(system[0]).not.toBe(user[0])
    const split = hashesOf(
      blocksOf({
        messages: [
          { role: 'user', content: c.slice(0, 1500) },
          { role: 'user', content: c.slice(1500) },
        ],
      }),
    )
    expect(split[30]).not.toBe(user[30])
    const tools = [{ type: 'function', function: { name: 'f', parameters: {} } }]
    const withTools = hashesOf(blocksOf({ messages: [{ role: 'user', content: c }], tools }))
    expect(withTools[0]).not.toBe(user[0])
    expect(withTools.length).toBe(user.length) // tools count no characters, as the estimate counts none
    // text parts are the same text as a string content
    const parts = hashesOf(blocksOf({ messages: [{ role: 'user', content: [{ type: 'text', text: c }] }] }))
    expect(parts).toEqual(user)
  })

  it('completions: a text prompt, or token ids at one token each; several prompts have no single prefix', () => {
    const p = text(1280, 5)
    expect(blocksOf({ prompt: p }).count).toBe(20)
    expect(blocksOf({ prompt: [p] }).count).toBe(20)
    const ids = Array.from({ length: 160 }, (_, i) => i * 7919)
    expect(blocksOf({ prompt: ids }).count).toBe(10) // 16 ids a block
    const size = promptSize({ prompt: [p, p] })
    expect(promptBlocks({ prompt: [p, p] }, g, size.chars, size.messages)).toBeUndefined()
    // the Responses API: instructions as a system message, then the input items
    const r = blocksOf({ instructions: text(600, 6), input: [{ role: 'user', content: text(700, 7) }] })
    expect(r.totalUnits).toBe(16 + 600 + 16 + 700)
  })

  it('follows the characters-per-token ratio (snapped to quarters) in the geometry', () => {
    const g35 = blockGeometry(16, 3.49)
    expect(g35.charsPerToken).toBe(3.5)
    expect(g35.unitsPerBlock).toBe(56)
    expect(g35.key).not.toBe(g.key)
    expect(blockGeometry(32, 4).unitsPerBlock).toBe(128)
  })

  it('hashes a 100 KB prompt in one linear pass into one buffer (a micro-benchmark that asserts results, not speed)', () => {
    const big = {
      messages: [
        { role: 'system', content: text(50_000, 11) },
        { role: 'user', content: text(50_000, 12) },
      ],
    }
    const size = promptSize(big)
    let last: ReturnType<typeof blocksOf> | undefined
    const started = performance.now()
    for (let i = 0; i < 50; i++) last = promptBlocks(big, g, size.chars, size.messages)
    const perPromptMs = (performance.now() - started) / 50
    expect(last?.count).toBe(Math.floor((100_000 + 32) / 64))
    expect(last?.hashes.length).toBeLessThanOrEqual(Math.ceil((100_000 + 32) / 64) + 1) // sized once, never grown
    console.info(`prompt blocks: ${perPromptMs.toFixed(3)} ms per 100 KB prompt`) // for the eye, never asserted
  })
})
