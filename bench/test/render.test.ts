/**
 * The bench's config templates (bench/peers/): placeholders filled on config lines, left alone
 * in comments, and the HAProxy yardstick in front of two replicas a config HAProxy takes
 * (a value of several lines once landed in the header comment and broke it).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { serverLines } from '../admission-peers.js'
import { render } from '../targets.js'

const ROOT = join(import.meta.dirname, '..', '..')

describe('bench config templates', () => {
  it('fills placeholders on config lines and leaves comment lines as they are', () => {
    const out = render('# fills __A__\n  a __A__;\n  # __B__ too\n__B__\n', { A: 1, B: 'x\ny' })
    expect(out).toBe('# fills __A__\n  a 1;\n  # __B__ too\nx\ny\n')
  })

  // haproxy is installed by npm test's scripts/test-prereqs.mjs
  it('renders the HAProxy yardstick for two replicas into a config HAProxy accepts', () => {
    const urls = ['http://127.0.0.1:9001', 'http://127.0.0.1:9002']
    const conf = render(readFileSync(join(ROOT, 'bench/peers/haproxy-maxconn.cfg'), 'utf8'), {
      PORT: 18999,
      QUEUE_TIMEOUT_MS: 350,
      BATCH_QUEUE_TIMEOUT_S: 1800,
      INTERACTIVE_SERVERS: serverLines('haproxy', urls, 4),
      BATCH_SERVERS: serverLines('haproxy', urls, 2),
    })
    const file = join(mkdtempSync(join(tmpdir(), 'render-')), 'h.cfg')
    writeFileSync(file, conf)
    // -c: check the configuration only; throws on a non-zero exit
    execFileSync('haproxy', ['-c', '-f', file], { stdio: 'pipe' })
    expect(conf.match(/^ {2}server s1 /gm)).toHaveLength(2)
  })
})
