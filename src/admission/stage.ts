/**
 * Stage admission: the request gets its lease (now, or after waiting in its pool's queue)
 * or the refusal admission made. The lease is registered with the request's Exchange, so
 * it hears how the request ends. A client that leaves while queued is taken out of the
 * queue and its exchange ends as cancelled.
 */
import type { Backends, Lease } from '../backends/types.js'
import type { Clock } from '../clock.js'
import type { GatewayConfig } from '../config/schema.js'
import { GatewayError } from '../errors.js'
import {
  ENDED,
  type GatewayRequest,
  type Stage,
  type StageDeps,
  type StageResult,
} from '../gateway-request.js'
import type { TokenEstimator } from '../openai/token-estimator.js'
import { CLIENT_CLOSED } from '../ticket.js'
import { Admission, type AdmissionLogger } from './admission.js'
import { type AdmissionControl, isQueued, type Queued } from './face.js'
import { PassThrough } from './pass-through.js'

/** Admission as the config asks: SLO-aware, or a pass-through (a plain proxy). */
export function createAdmission(
  config: GatewayConfig,
  backends: Backends,
  clock: Clock,
  tokens: TokenEstimator,
  logger?: AdmissionLogger,
): AdmissionControl {
  return config.admission.enabled ? new Admission(config, backends, clock, tokens, logger) : new PassThrough()
}

function grant(r: GatewayRequest, lease: Lease): void {
  r.lease = lease
  r.exchange.observe(lease)
}

function waitFor(r: GatewayRequest, queued: Queued): Promise<StageResult> {
  return new Promise((resolve) => {
    const onClose = () => {
      if (!queued.cancel()) return
      r.ticket.outcome = 'cancelled'
      r.ticket.status = CLIENT_CLOSED
      r.exchange.end(undefined)
      resolve(ENDED)
    }
    r.res.once('close', onClose)
    // the gateway is going away: out of the queue, refused with the drain's error
    r.exchange.onStop((err) => {
      if (queued.cancel()) {
        r.res.off('close', onClose)
        resolve(err)
      }
    })
    void queued.lease.then((lease) => {
      r.res.off('close', onClose)
      if (lease instanceof GatewayError) return resolve(lease)
      grant(r, lease)
      resolve(undefined)
    })
  })
}

export function admissionStage(deps: StageDeps): Stage {
  const admission = deps.admission
  return (r) => {
    const admitted = admission.admit(r.ticket, r.body, r.pool)
    if (admitted instanceof GatewayError) return admitted
    if (isQueued(admitted)) return waitFor(r, admitted)
    grant(r, admitted)
    return undefined
  }
}
