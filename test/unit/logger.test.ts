import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../../src/logger.js'

describe('logger', () => {
  it('redacts authorization, x-api-key and cookies wherever headers are logged', () => {
    const lines: string[] = []
    const sink = new Writable({
      write(c: Buffer, _e, cb) {
        lines.push(c.toString())
        cb()
      },
    })
    const log = createLogger('info', sink)
    const headers = {
      authorization: 'Bearer sk-secret',
      'x-api-key': 'sk-key',
      cookie: 'session=abc',
      'x-priority': 'batch',
    }
    log.info({ req: { headers } }, 'a')
    log.info({ headers }, 'b')
    const out = lines.join('')
    expect(out).not.toMatch(/sk-secret|sk-key|session=abc/)
    expect(out).toContain('[redacted]')
    expect(out).toContain('batch')
  })
})
