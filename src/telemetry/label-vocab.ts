/**
 * The label values the telemetry knows by name (every other value passes through a cap,
 * then becomes `other`). Reject reasons and degrade actions come from their definitions.
 */
import { degradeActionNames } from '../admission/degrade/registry.js'
import { ERRORS, type ErrorDef } from '../errors.js'

/** Reject reasons and degrade actions from their definitions; others pass through a cap. */
export const KNOWN_REASONS = Object.values(ERRORS).flatMap((d: ErrorDef) =>
  d.rejectReason === undefined ? [] : [d.rejectReason],
)
export const KNOWN_ACTIONS = degradeActionNames
export const KNOWN_KINDS = [
  'upstream_4xx',
  'upstream_408',
  'upstream_429',
  'upstream_5xx',
  'upstream_unreachable',
  'upstream_reset',
  'upstream_timeout',
  'upstream_stream_failed',
  'internal',
]
export const KNOWN_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH']
/** Distinct values beyond the known ones before `other`. */
export const EXTRA_REASONS = 32
export const EXTRA_MODELS = 16
export const EXTRA_ROUTES = 64
