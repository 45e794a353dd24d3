/**
 * The request's path as data: the stage list, the Ticket as a plain record, and the
 * seams between capabilities (the proxy sees admission only through its face).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ERRORS } from '../../../src/errors.js'
import { STAGES } from '../../../src/stages.js'
import { Ticket } from '../../../src/ticket.js'

const SRC = join(import.meta.dirname, '../../../src')

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)].map((m) => m[1]!)
}

describe('the stage list', () => {
  it('runs identify, parse, limits, admission, forward, in that order', () => {
    expect(STAGES.map((s) => s.name)).toEqual(['identify', 'parse', 'limits', 'admission', 'forward'])
  })

  it('builds every stage into a function', () => {
    for (const s of STAGES) expect(typeof s.build, s.name).toBe('function')
  })
})

describe('the Ticket', () => {
  it('holds data only: no function-valued field, on a fresh ticket or its prototype', () => {
    const t = new Ticket('id', 'POST', '/v1/chat/completions', 0)
    for (const [k, v] of Object.entries(t)) expect(typeof v, k).not.toBe('function')
    const source = readFileSync(join(SRC, 'ticket.ts'), 'utf8')
    // a field typed as a function would be `name: (...) => ...` or `name?: (...) =>`
    expect(source).not.toMatch(/^\s+\w+\??:\s*\(\(?[^)]*\)\s*=>/m)
    expect(source).not.toMatch(/\)\s*=>\s*void\)\s*\|/)
  })
})

describe('seams', () => {
  it('the proxy imports nothing from admission/ but its face', () => {
    const dir = join(SRC, 'proxy')
    for (const f of readdirSync(dir)) {
      for (const spec of importsOf(join(dir, f))) {
        if (spec.includes('/admission/')) expect(spec, `${f} imports ${spec}`).toBe('../admission/index.js')
      }
    }
  })

  it('every error says what outcome it gives; an internal failure counts against availability', () => {
    for (const [code, def] of Object.entries(ERRORS)) {
      expect(['invalid', 'rejected', 'failed'], code).toContain(def.outcome)
      if ('rejectReason' in def) expect(def.outcome, code).toBe('rejected')
    }
    expect(ERRORS.GW_ERR_INTERNAL.outcome).toBe('failed')
    expect(ERRORS.GW_ERR_UPSTREAM_TIMEOUT.outcome).toBe('failed')
    expect(ERRORS.GW_ERR_INVALID_JSON.outcome).toBe('invalid')
  })
})
