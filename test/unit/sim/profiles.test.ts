import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadProfile, PROFILES_DIR, ProfileError, parseProfileText } from '../../../src/sim/profile-loader.js'

describe('sim profiles', () => {
  it('ships the four documented profiles, all valid', () => {
    const names = readdirSync(PROFILES_DIR).filter((f) => f.endsWith('.yaml'))
    for (const n of ['llama-3.1-8b-h100', 'llama-3.1-8b-a100', 'llama-3.1-70b-h100-tp4', 'tiny']) {
      expect(names).toContain(`${n}.yaml`)
      const p = loadProfile(n)
      expect(p.name).toBe(n)
      expect(p.engine.numGpuBlocks * p.engine.blockSize).toBeGreaterThanOrEqual(p.engine.maxModelLen)
    }
  })

  it('the 8b-h100 profile carries the constants of issue #3', () => {
    const p = loadProfile('llama-3.1-8b-h100')
    expect(p.stepTime).toEqual({
      baseMs: 6.5,
      perPrefillTokenMs: 0.025,
      perDecodeSeqMs: 0.006,
      perContextTokenMs: 0.00006,
    })
    expect(p.engine).toMatchObject({
      maxNumSeqs: 256,
      maxNumBatchedTokens: 8192,
      maxModelLen: 32768,
      numGpuBlocks: 27500,
    })
  })

  it('every engine and step-time constant in a shipped profile has a comment saying where it comes from', () => {
    for (const f of readdirSync(PROFILES_DIR).filter((x) => x.endsWith('.yaml'))) {
      const lines = readFileSync(join(PROFILES_DIR, f), 'utf8').split('\n')
      let section = ''
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i]!
        const top = /^(\w+):/.exec(line)
        if (top !== null) section = top[1]!
        const key = /^ {2}(\w+):/.exec(line)
        if (key === null || (section !== 'engine' && section !== 'step_time')) continue
        const prev = (lines[i - 1] ?? '').trim()
        expect(prev.startsWith('#') || line.includes('#'), `${f}: ${section}.${key[1]} needs a comment`).toBe(
          true,
        )
      }
    }
  })

  it('reports the file, the key path and the rule when a profile is invalid', () => {
    const bad =
      'name: x\nmodel: m\nengine: { num_gpu_blocks: 1, max_num_seqs: 1, max_num_batched_tokens: 1, max_model_len: 99 }\n' +
      'step_time: { base_ms: -1, per_prefill_token_ms: 0, per_decode_seq_ms: 0, per_context_token_ms: 0 }\n' +
      'output_tokens: { distribution: fixed, tokens: 1 }\nextra: 1\n'
    expect(() => parseProfileText(bad, 'bad.yaml')).toThrow(ProfileError)
    try {
      parseProfileText(bad, 'bad.yaml')
    } catch (e) {
      const msg = (e as Error).message
      expect(msg).toContain('bad.yaml')
      expect(msg).toContain('step_time.base_ms')
      expect(msg).toContain('extra')
    }
    expect(() => loadProfile('no-such-profile')).toThrow(/cannot read/)
  })
})
