/**
 * The request's path, as data: the stages in the order they run, as fastify's lib/hooks.js
 * lists its lifecycle.
 *
 *   identify -> parse -> limits -> admission -> forward        (account: when it ends)
 *
 * Each stage has one job. It fills in the request's Ticket and then hands the request on
 * (returns undefined), refuses it (returns the GatewayError to answer with), or waits
 * (returns a Promise of either: admission, while the request is queued). A stage that has
 * ended the exchange itself (the client left while queued) returns ENDED. The runner is
 * src/proxy/pipeline.ts. What happens after dispatch (first token, token gaps, the end) is
 * told to the parts that care by the request's Exchange (src/exchange.ts); accounting is
 * one of its observers, so it runs once for every request, however it ends.
 */
import { admissionStage } from './admission/index.js'
import type { Stage, StageDeps } from './gateway-request.js'
import { parseStage } from './openai/parse.js'
import { forwardStage } from './proxy/forward.js'
import { identifyStage } from './tenants/identify.js'
import { limitsStage } from './tenants/limits.js'

export type { GatewayRequest, Stage, StageDeps, StageResult } from './gateway-request.js'
export { ENDED } from './gateway-request.js'

/** The stages, in order. Names are stable (logs, docs, the test of this list). */
export const STAGES = [
  { name: 'identify', build: identifyStage },
  { name: 'parse', build: parseStage },
  { name: 'limits', build: limitsStage },
  { name: 'admission', build: admissionStage },
  { name: 'forward', build: forwardStage },
] as const satisfies readonly { name: string; build: (deps: StageDeps) => Stage }[]

export type StageName = (typeof STAGES)[number]['name']

/** The stage functions, in order, built once. */
export function buildStages(deps: StageDeps): readonly Stage[] {
  return STAGES.map((s) => s.build(deps))
}
