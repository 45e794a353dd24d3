/** One request as a stage sees it, for unit tests of stages (no HTTP: `res` is not there). */
import { systemClock } from '../../src/clock.js'
import { Exchange } from '../../src/exchange.js'
import type { GatewayRequest } from '../../src/gateway-request.js'
import { Ticket } from '../../src/ticket.js'

export function stageRequest(
  url: string,
  received: unknown,
  headers: Record<string, string> = {},
): GatewayRequest {
  const ticket = new Ticket('t', 'POST', url, 0)
  return {
    ticket,
    exchange: new Exchange(ticket, systemClock, []),
    method: 'POST',
    url,
    headers,
    res: undefined as never,
    kind: 'json',
    received,
    body: undefined,
    pool: undefined,
    lease: undefined,
  }
}
