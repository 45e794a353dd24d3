import { describe, expect, it } from 'vitest'
import { clientResponseHeaders, upstreamRequestHeaders } from '../../../src/proxy/headers.js'

describe('header hygiene', () => {
  it('strips hop-by-hop headers and those named in Connection from the request', () => {
    const out = upstreamRequestHeaders({
      host: 'gw',
      connection: 'keep-alive, x-secret-hop',
      'keep-alive': 'timeout=5',
      'x-secret-hop': '1',
      'transfer-encoding': 'chunked',
      te: 'trailers',
      upgrade: 'h2c',
      'proxy-authorization': 'Basic x',
      'content-length': '10',
      'accept-encoding': 'gzip',
      'x-priority': 'batch',
      authorization: 'Bearer k',
    })
    expect(out).toEqual({ 'x-priority': 'batch', authorization: 'Bearer k' })
  })

  it('strips hop-by-hop headers and those named in Connection from the response', () => {
    const out = clientResponseHeaders({
      connection: 'close, x-upstream-hop',
      'x-upstream-hop': 'a',
      'transfer-encoding': 'chunked',
      'keep-alive': 'timeout=5',
      'content-type': 'text/event-stream',
      'x-request-id': 'r',
    })
    expect(out).toEqual({ 'content-type': 'text/event-stream', 'x-request-id': 'r' })
  })
})
